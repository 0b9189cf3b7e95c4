#!/usr/bin/env bash
# release.sh builds runbot's release binaries: static (CGO off, the SQLite
# driver is pure Go), stripped, reproducible paths (-trimpath), one per
# platform, named runbot-VERSION-OS-ARCH, with a SHA256SUMS file beside them.
#
#   scripts/release.sh [DIST]          # default dist/
#   VERSION=v1.2.3 PLATFORMS="linux/amd64" scripts/release.sh /tmp/out
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:-dist}
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
platforms=${PLATFORMS:-"linux/amd64 linux/arm64"}
commit=$(git rev-parse HEAD 2>/dev/null || true)
if [ -n "$commit" ] && [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit+dirty"; fi
mkdir -p "$dist"
names=()
for p in $platforms; do
    os=${p%/*} arch=${p#*/}
    name="runbot-$version-$os-$arch"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$version -X main.commit=$commit" -o "$dist/$name" ./cmd/runbot
    names+=("$name")
done
(cd "$dist" && sha256sum "${names[@]}" > SHA256SUMS)
echo "built ${names[*]} in $dist (SHA256SUMS beside them)"
