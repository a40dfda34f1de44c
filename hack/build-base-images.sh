#!/usr/bin/env bash
# Builds, into buildah's local storage, stand-ins for the base images that
# the project's Dockerfiles name and that cannot be pulled here, under those
# names, from the Dockerfiles in test/images/:
#   - docker.io/library/golang:1.26 (the manager's builder stage): this
#     machine's Go toolchain, busybox-static for the shell, the CA bundle;
#   - gcr.io/distroless/static:nonroot (the manager's base): passwd and
#     group with nonroot (65532), /tmp, the CA bundle, nothing else; as the
#     original, a manifest list with one image per platform of PLATFORMS
#     (comma-separated, default: this machine's), the files being the same
#     for every architecture.
# The project's Dockerfiles stay what a user with Docker runs. An image
# already in the storage is kept (the base image, when its list has every
# platform asked for).
#   [PLATFORMS=linux/amd64,linux/arm64] hack/build-base-images.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib/debian.sh
use_buildah

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ca=/etc/ssl/certs/ca-certificates.crt

if ! buildah inspect --type image docker.io/library/golang:1.26 >/dev/null 2>&1; then
  root=$work/golang/rootfs
  busybox_rootfs "$root"
  mkdir -p "$root/usr/local" "$root/etc/ssl/certs" "$root/go" "$root/root"
  cp -a "$(go env GOROOT)" "$root/usr/local/go"
  cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
  buildah bud --quiet -f test/images/golang/Dockerfile -t docker.io/library/golang:1.26 "$work/golang" >/dev/null
  echo "built docker.io/library/golang:1.26 from $(go version | awk '{print $3}')"
fi

base=gcr.io/distroless/static:nonroot
host=linux/$(go env GOARCH)
platforms=$(tr ',' '\n' <<<"${PLATFORMS:-$host},$host" | sed '/^$/d' | sort -u)
# Each platform's image also carries a local name of its own, so that what
# is there is read from local storage only (`buildah manifest inspect` would
# ask gcr.io about a name it does not hold as a list, and get the real
# image's platforms).
instance() { echo "localhost/podset-operator-stand-in/distroless-static:nonroot-${1//\//-}"; }
missing=
buildah inspect --type image "$base" >/dev/null 2>&1 || missing=yes
for p in $platforms; do
  buildah inspect --type image "$(instance "$p")" >/dev/null 2>&1 || missing=yes
done
if [[ -n "$missing" ]]; then
  # A single image of that name (as older versions of this script left
  # it) or a list that lacks a platform: make the list again.
  buildah manifest rm "$base" >/dev/null 2>&1 || buildah rmi "$base" >/dev/null 2>&1 || true
  root=$work/distroless/rootfs
  mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/home/nonroot"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$root/etc/group"
  cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
  chmod 1777 "$root/tmp"
  chown 65532:65532 "$root/home/nonroot"
  buildah manifest create "$base" >/dev/null
  for p in $platforms; do
    # FROM scratch and COPY only: no step runs in the image, so building
    # it for another architecture needs no emulator.
    buildah build --quiet --platform="$p" -t "$(instance "$p")" \
      -f test/images/distroless-static/Dockerfile "$work/distroless" >/dev/null
    buildah manifest add "$base" "containers-storage:$(instance "$p")" >/dev/null
  done
  echo "built $base for $(paste -sd' ' <<<"$platforms")"
fi
