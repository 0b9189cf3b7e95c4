#!/usr/bin/env bash
# /root/serve_dsv4_prefill.sh -- started by systemd unit sglang-dsv4-prefill.service
# runbot test host: shaped like the incident machine's prefill launcher. Only the
# server changed: sglang-sim engine takes sglang.launch_server's flags (and warns
# about those it does not model). HTTP, /metrics and the bootstrap port listen on
# loopback only, so runbot reaches them through its SSH connection.
# Prefill engine: GPUs 0-3, TP4 (no DP attention), KV handed to decode over NIXL/UCX.
set -euo pipefail

export SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX
export SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300
export UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1
export NCCL_IB_HCA=mlx5_0,mlx5_1
export PYTORCH_ALLOC_CONF=expandable_segments:True
export TOKENIZERS_PARALLELISM=false

exec /usr/local/bin/sglang-sim engine \
  --model-path /models/DeepSeek-V4-Flash \
  --served-model-name deepseek-v4 \
  --trust-remote-code \
  --host 127.0.0.1 \
  --port 30100 \
  --base-gpu-id 0 \
  --tp-size 4 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend nixl \
  --disaggregation-bootstrap-port 8998 \
  --mem-fraction-static 0.82 \
  --chunked-prefill-size 16384 \
  --max-running-requests 64 \
  --page-size 64 \
  --watchdog-timeout 300 \
  --enable-metrics \
  --log-level info
