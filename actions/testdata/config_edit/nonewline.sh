#!/bin/sh
exec python3 -m sglang.launch_server \
  --model-path /models/m \
  --log-level info