#!/usr/bin/env bash
# Installs from Debian what `make image` needs (podman, which builds with its
# built-in buildah, and the CA bundle the image carries) and, with --run, what
# running the image needs too (runc), or fails naming what is missing. Only
# root installs; anyone else is told what to install.
#
#   deploy/image/deps.sh          # to build the image
#   deploy/image/deps.sh --run    # to build and run it (the image test)
set -euo pipefail

need_pkgs=()
command -v podman >/dev/null 2>&1 || need_pkgs+=(podman)
[ -r /etc/ssl/certs/ca-certificates.crt ] || need_pkgs+=(ca-certificates)
# Debian's podman runs containers with crun, which refuses hosts with cgroups
# in hybrid mode (v1 controllers with a v2 hierarchy that has controllers too,
# as some CI sandboxes have); runc runs on v1, hybrid and v2 alike, so the
# image test uses it.
if [ "${1:-}" = --run ]; then
    command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
fi

if ((${#need_pkgs[@]})); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "image-deps: installing ${need_pkgs[*]} (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
    else
        echo "image-deps: missing Debian packages: ${need_pkgs[*]} (install them, or run as root)" >&2
        exit 1
    fi
fi
