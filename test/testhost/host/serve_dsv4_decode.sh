#!/usr/bin/env bash
# /root/serve_dsv4_decode.sh -- started by systemd unit sglang-dsv4-decode.service
# runbot test host: shaped like the incident machine's decode launcher. Only the
# server changed: sglang-sim engine takes sglang.launch_server's flags (and warns
# about those it does not model). HTTP and /metrics listen on loopback only, so
# runbot reaches them through its SSH connection.
# Decode engine: GPUs 4-7, TP4 with DP attention (DP4), KV received over NIXL/UCX.
# This is the pre-fix ("wedge-prone") variant: scheduler options are left at their defaults.
set -euo pipefail

export SGLANG_DISAGGREGATION_NIXL_BACKEND=UCX
export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=300
export UCX_NET_DEVICES=mlx5_2:1,mlx5_3:1
export NCCL_IB_HCA=mlx5_2,mlx5_3
export PYTORCH_ALLOC_CONF=expandable_segments:True
export TOKENIZERS_PARALLELISM=false

exec /usr/local/bin/sglang-sim engine \
  --model-path /models/DeepSeek-V4-Flash \
  --served-model-name deepseek-v4 \
  --trust-remote-code \
  --host 127.0.0.1 \
  --port 30200 \
  --base-gpu-id 4 \
  --tp-size 4 \
  --dp-size 4 \
  --enable-dp-attention \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend nixl \
  --disaggregation-bootstrap-port 8998 \
  --mem-fraction-static 0.85 \
  --max-running-requests 128 \
  --page-size 64 \
  --cuda-graph-max-bs 32 \
  --decode-log-interval 40 \
  --watchdog-timeout 300 \
  --enable-metrics \
  --log-level info
