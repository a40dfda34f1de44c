#!/usr/bin/env bash
# Builds, into buildah's local storage, stand-ins for the base images that
# the project's Dockerfiles name and that cannot be pulled here, under those
# names, from the Dockerfiles in test/images/:
#   - docker.io/library/golang:1.26 (the manager's builder stage): this
#     machine's Go toolchain, busybox-static for the shell, the CA bundle;
#   - gcr.io/distroless/static:nonroot (the manager's base): passwd and
#     group with nonroot (65532), /tmp, the CA bundle, nothing else.
# The project's Dockerfiles stay what a user with Docker runs. An image
# already in the storage is kept.
#   hack/build-base-images.sh
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

if ! buildah inspect --type image gcr.io/distroless/static:nonroot >/dev/null 2>&1; then
  root=$work/distroless/rootfs
  mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/home/nonroot"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$root/etc/group"
  cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
  chmod 1777 "$root/tmp"
  chown 65532:65532 "$root/home/nonroot"
  buildah bud --quiet -f test/images/distroless-static/Dockerfile -t gcr.io/distroless/static:nonroot "$work/distroless" >/dev/null
  echo "built gcr.io/distroless/static:nonroot"
fi
