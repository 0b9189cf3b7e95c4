#!/usr/bin/env bash
# Installs the real parts the test suite runs against, or fails naming them.
set -euo pipefail

need_pkgs=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_pkgs+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need_pkgs+=(openssh-client)
command -v ssh-keygen >/dev/null 2>&1 || need_pkgs+=(openssh-client)
command -v pgrep >/dev/null 2>&1 || need_pkgs+=(procps)
command -v dbus-daemon >/dev/null 2>&1 || need_pkgs+=(dbus-daemon)
# The PostgreSQL store's tests start a throwaway cluster with initdb and
# pg_ctl; the postgres system user the package creates runs it.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_pkgs+=(postgresql)
# The web report pages are tested in a real browser: Debian's headless
# Chromium, driven by chromedp.
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
# The store-fault tests put SQLite on a small ext4 loop mount and set the
# immutable flag on its files (mkfs.ext4, chattr).
command -v mkfs.ext4 >/dev/null 2>&1 || need_pkgs+=(e2fsprogs)
command -v chattr >/dev/null 2>&1 || need_pkgs+=(e2fsprogs)

if ((${#need_pkgs[@]})); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "test-deps: installing ${need_pkgs[*]} (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    else
        echo "test-deps: missing Debian packages: ${need_pkgs[*]} (install them, or run make test as root)" >&2
        exit 1
    fi
fi
mkdir -p /run/sshd 2>/dev/null || true

gobin="$(go env GOPATH)/bin"
if [ ! -x "$gobin/alertmanager" ]; then
    echo "test-deps: installing alertmanager v0.31.1 (go install)"
    go install github.com/prometheus/alertmanager/cmd/alertmanager@v0.31.1
fi
