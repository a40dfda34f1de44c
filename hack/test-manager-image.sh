#!/usr/bin/env bash
# Builds the manager image with `make docker-build`, as a user would, with
# buildah (no daemon) over stand-ins for its base images
# (hack/build-base-images.sh), and checks it: it runs as 65532:65532, its
# entrypoint is /manager, a static binary that starts in the image, it
# holds nothing but the base, /manager and /licenses/LICENSE, and it carries
# the labels that Red Hat's certification requires. With OUT set, it also saves the
# image as a docker-archive there (for the real node).
#   hack/test-manager-image.sh [IMG]
set -euo pipefail
cd "$(dirname "$0")/.."
img=${1:-localhost/podset-operator:test-$$}
source hack/lib/debian.sh
use_buildah
hack/build-base-images.sh
# The host's module and build caches, mounted into the builder: the same
# Dockerfile, without downloading and compiling everything again.
# VERSION set apart from the Makefile's and the Dockerfile's default: the
# version label must come from what make passes.
label_version=0.0.0-image-test
make --no-print-directory docker-build CONTAINER_TOOL=buildah IMG="$img" VERSION="$label_version" \
  DOCKER_BUILD_ARGS="--quiet --build-arg TARGETOS=linux --build-arg TARGETARCH=$(go env GOARCH) -v $(go env GOMODCACHE):/go/pkg/mod -v $(go env GOCACHE):/root/.cache/go-build" >/dev/null

ctr=$(buildah from "$img")
cleanup() { buildah rm "$ctr" >/dev/null || true; [[ -n "${KEEP_IMAGE:-}" ]] || buildah rmi "$img" >/dev/null || true; }
trap cleanup EXIT
fail() { echo "manager image $img: $*" >&2; exit 1; }

user=$(buildah inspect --format '{{.OCIv1.Config.User}}' "$img")
[[ "$user" == 65532:65532 ]] || fail "runs as '$user', not 65532:65532"
entry=$(buildah inspect --format '{{.OCIv1.Config.Entrypoint}}' "$img")
[[ "$entry" == '[/manager]' ]] || fail "entrypoint is $entry"

root=$(buildah mount "$ctr")
extra=$(cd "$root" && find . -mindepth 1 | grep -v -E '^\./(manager|licenses|licenses/LICENSE|etc|etc/(passwd|group|ssl|ssl/certs|ssl/certs/ca-certificates\.crt)|tmp|home|home/nonroot)$' || true)
[[ -z "$extra" ]] || fail "unexpected files: $extra"
cmp -s LICENSE "$root/licenses/LICENSE" || fail "/licenses/LICENSE is not the project's LICENSE"
# The labels Red Hat's certification (preflight) requires; the Dockerfile's
# default version is the Makefile's VERSION.
version=$(sed -n 's/^VERSION ?= //p' Makefile)
for label in name vendor version release summary description maintainer; do
  value=$(buildah inspect --format "{{index .OCIv1.Config.Labels \"$label\"}}" "$img")
  [[ -n "$value" ]] || fail "no label $label"
done
[[ "$(buildah inspect --format '{{index .OCIv1.Config.Labels "version"}}' "$img")" == "$label_version" ]] || fail "label version is not the VERSION make docker-build was given ($label_version)"
grep -qx "ARG VERSION=$version" Dockerfile || fail "the Dockerfile's default VERSION is not the Makefile's $version"
go version -m "$root/manager" | grep -q 'CGO_ENABLED=0' || fail "/manager is not a static (CGO_ENABLED=0) build"
buildah umount "$ctr" >/dev/null

# It starts in its own image, as its own user, with no shell around it.
help=$(buildah run --user 65532:65532 "$ctr" /manager --help 2>&1 || true)
grep -q -- '-leader-elect' <<<"$help" || fail "/manager --help did not run: $help"

[[ -z "${OUT:-}" ]] || save_archive "$img" "$OUT/manager.tar"
echo "manager image $img: 65532:65532, entrypoint /manager (static), nothing but the base, /manager and /licenses/LICENSE, preflight's labels (version from make's VERSION; the Dockerfile's default is the Makefile's $version); it starts"
