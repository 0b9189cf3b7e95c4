#!/bin/bash
set -e

export UCX_TLS=rc,cuda_copy

exec python3 -m sglang.launch_server \
	--model-path /models/m \
	--tp-size 4 \
	--enable-metrics \
	"$@"
