#!/bin/bash
export SGLANG_DISAGGREGATION_NIXL_BACKEND="UCX"
exec python3 -m sglang.launch_server                   \
    --model-path /models/DeepSeek-V4-Flash             \
    --served-model-name "deepseek v4"                  \
    --disaggregation-mode=decode                       \
    --enable-metrics
