#!/usr/bin/env bash
# Installs the real parts the test suite runs against, or fails naming them.
#
# Debian packages are installed without their recommends: the tests need
# the programs below, not what a desktop adds to them (avahi, udev, upower,
# samba and cups helpers, fonts), which made make test install over two
# hundred packages more. Chromium runs headless, sshd and PostgreSQL's
# initdb and pg_ctl run as they are, without any of those. Before
# installing anything the script prints each package it will install and
# why, one line each; with everything present it installs nothing.
set -euo pipefail

pkgs=()
reasons=()

# need PACKAGE WHY: the package goes on the list once, with the first
# reason given.
need() {
    local p
    for p in "${pkgs[@]}"; do
        [ "$p" = "$1" ] && return 0
    done
    pkgs+=("$1")
    reasons+=("$2")
}

# missing lists what the tests need and this machine lacks. It runs again
# after installing, so that a package that no longer brings what a test
# needs fails here rather than in the middle of make test.
missing() {
    pkgs=()
    reasons=()
    command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] ||
        need openssh-server "sshd: remote/sshrun, runbooks and the CLI's tests run their commands over SSH against a real sshd"
    command -v ssh >/dev/null 2>&1 ||
        need openssh-client "ssh: the SSH tests connect with the OpenSSH client too"
    command -v ssh-keygen >/dev/null 2>&1 ||
        need openssh-client "ssh-keygen: the SSH tests make their host and user keys"
    command -v pgrep >/dev/null 2>&1 ||
        need procps "pgrep: the SSH tests check that a cancelled command leaves no process behind"
    command -v dbus-daemon >/dev/null 2>&1 ||
        need dbus-daemon "dbus-daemon: the systemd unit calls are tested on a private D-Bus, against a fake systemd"
    # The PostgreSQL store's tests start a throwaway cluster with initdb and
    # pg_ctl; the postgres system user the package creates runs it.
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
        need postgresql "initdb, pg_ctl: the PostgreSQL store's tests start a throwaway cluster"
    # The web report pages are tested in a real browser: Debian's headless
    # Chromium, driven by chromedp.
    command -v chromium >/dev/null 2>&1 ||
        need chromium "chromium: the web report pages are tested in a real headless browser (chromedp)"
    # The store-fault tests put SQLite on a small ext4 loop mount and set the
    # immutable flag on its files (mkfs.ext4, chattr).
    command -v mkfs.ext4 >/dev/null 2>&1 ||
        need e2fsprogs "mkfs.ext4: the store-fault tests put SQLite on a small ext4 loop mount"
    command -v chattr >/dev/null 2>&1 ||
        need e2fsprogs "chattr: the store-fault tests make the store's files immutable"
    # Without recommends nothing else brings the CA certificates, which go
    # install needs to fetch from the module proxy over HTTPS.
    [ -s /etc/ssl/certs/ca-certificates.crt ] ||
        need ca-certificates "CA certificates: go install fetches Alertmanager from the Go module proxy over HTTPS"
}

missing
if ((${#pkgs[@]})); then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "test-deps: missing Debian packages (install them, or run make test as root):" >&2
        for i in "${!pkgs[@]}"; do
            printf 'test-deps:   %-16s %s\n' "${pkgs[$i]}" "${reasons[$i]}" >&2
        done
        exit 1
    fi
    echo "test-deps: installing ${#pkgs[@]} Debian package(s) with apt-get, without recommends:"
    for i in "${!pkgs[@]}"; do
        printf 'test-deps:   %-16s %s\n' "${pkgs[$i]}" "${reasons[$i]}"
    done
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    missing
    if ((${#pkgs[@]})); then
        echo "test-deps: still missing after apt-get install: ${pkgs[*]}" >&2
        exit 1
    fi
fi
mkdir -p /run/sshd 2>/dev/null || true

gobin="$(go env GOPATH)/bin"
if [ ! -x "$gobin/alertmanager" ]; then
    echo "test-deps: installing alertmanager v0.31.1 (go install): the alert route tests send alerts through a real Alertmanager"
    go install github.com/prometheus/alertmanager/cmd/alertmanager@v0.31.1
fi
