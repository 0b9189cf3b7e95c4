#!/bin/bash
# Starts the router in the background, then the engine.
python3 -m sglang_router.launch_router --pd-disaggregation --prefill http://127.0.0.1:30100 --decode http://127.0.0.1:30200 --host 0.0.0.0 --port 30001 --policy round_robin >/dev/null 2>&1 &
exec python3 -m sglang.launch_server \
  --model-path /models/m \
  --port 30200
