#!/usr/bin/env bash
# build.sh builds runbot's container image with podman, offline: the image
# starts FROM scratch (no registry is asked for anything) and holds a static
# runbot built here (CGO off, as scripts/release.sh builds it), this
# machine's CA bundle (Debian's ca-certificates) and a passwd with the
# non-root user runbot (uid 65532).
#
#   deploy/image/build.sh                       # localhost/runbot:VERSION and :latest
#   IMAGE=registry.example.com/runbot VERSION=v1.2.3 deploy/image/build.sh
#   ARCH=arm64 deploy/image/build.sh            # another architecture (no emulation needed)
#
# podman's storage and the rest of its setup come from its usual config, so
# CONTAINERS_STORAGE_CONF and friends apply (the image test uses them to build
# into a throwaway store).
set -euo pipefail
cd "$(dirname "$0")/../.."

image=${IMAGE:-localhost/runbot}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
arch=${ARCH:-$(go env GOARCH)}
commit=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$commit" ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit+dirty"; fi
ca=/etc/ssl/certs/ca-certificates.crt

command -v podman >/dev/null 2>&1 || { echo "image: podman is missing (deploy/image/deps.sh installs it as root)" >&2; exit 1; }
[ -r "$ca" ] || { echo "image: $ca is missing (apt-get install ca-certificates)" >&2; exit 1; }

# The image's files are laid out in a scratch directory and packed into the
# one archive the Containerfile adds (see there why an archive), so that
# nothing of the working tree but the binary ends up in the image.
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/root
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/var/lib/runbot"
CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
    -ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
    -o "$root/usr/local/bin/runbot" ./cmd/runbot
install -m 0644 "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
# The shell is nologin, which the image does not have: nobody is meant to
# log in, and there is no shell to log in to.
printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
    'runbot:x:65532:65532:runbot:/var/lib/runbot:/usr/sbin/nologin' > "$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'runbot:x:65532:' > "$root/etc/group"
chmod 0644 "$root/etc/passwd" "$root/etc/group"
chmod 0755 "$root" "$root/usr" "$root/usr/local" "$root/usr/local/bin" "$root/etc" "$root/etc/ssl" \
    "$root/etc/ssl/certs" "$root/var" "$root/var/lib"
chmod 1777 "$root/tmp"
chmod 0700 "$root/var/lib/runbot"

# The owners are set in the archive, not on disk, so that building needs no
# root. The commit's time (or SOURCE_DATE_EPOCH) as every file's time and a
# sorted archive make rebuilds of one commit give the same layer.
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
tarflags=(--sort=name --mtime="@$epoch" --numeric-owner --format=posix
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime)
tar "${tarflags[@]}" --owner=0 --group=0 --exclude=./var/lib/runbot \
    -cf "$ctx/rootfs.tar" -C "$root" ./etc ./tmp ./usr ./var
tar "${tarflags[@]}" --owner=65532 --group=65532 \
    -rf "$ctx/rootfs.tar" -C "$root" ./var/lib/runbot
cp deploy/image/Containerfile "$ctx/Containerfile"

# --pull=never makes a missing base an error rather than a download (FROM
# scratch needs none).
podman build --pull=never --arch "$arch" --os linux --timestamp "$epoch" \
    --label org.opencontainers.image.title=runbot \
    --label org.opencontainers.image.version="$version" \
    --label org.opencontainers.image.revision="$commit" \
    -t "$image:$version" -t "$image:latest" \
    -f "$ctx/Containerfile" "$ctx"
size=$(podman image inspect --format '{{.Size}}' "$image:$version")
echo "built $image:$version (and :latest), $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }') MiB ($size bytes)"
