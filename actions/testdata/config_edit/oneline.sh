#!/bin/sh
# One command on one line, its output piped on.
exec python3 -m sglang.launch_server --model-path /models/m --port 30000 --enable-metrics 2>&1 | cat
