#!/usr/bin/env bash
# Builds the bundle image with `make bundle-build`, as a user would, with
# buildah (Debian's package, installed when missing; no daemon, vfs storage,
# chroot isolation), and checks that the image holds exactly what bundle/
# holds, and the license. bundle.Dockerfile is FROM scratch, so this needs no base image.
# With OUT set, it also saves the image as OUT/bundle.tar (a docker-archive)
# under the name IMAGE (default BUNDLE_IMG's default), for the real node's
# registry.
#   [OUT=DIR] hack/test-bundle-image.sh [IMAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib/debian.sh
use_buildah
img=${1:-localhost/podset-operator-bundle:test-$$}
make --no-print-directory bundle-build CONTAINER_TOOL=buildah BUNDLE_IMG="$img"
ctr=$(buildah from "$img")
cleanup() { buildah rm "$ctr" >/dev/null || true; buildah rmi "$img" >/dev/null || true; }
trap cleanup EXIT
root=$(buildah mount "$ctr")
for d in manifests metadata tests/scorecard; do
  diff -r "bundle/$d" "$root/$d"
done
cmp -s LICENSE "$root/licenses/LICENSE" || { echo "the bundle image's /licenses/LICENSE is not the project's LICENSE" >&2; exit 1; }
# Nothing else: the three directories, the license and their parents.
extra=$(cd "$root" && find . -mindepth 1 | grep -v -E '^\./((manifests|metadata|tests)(/|$)|licenses$|licenses/LICENSE$)' || true)
[[ -z "$extra" ]] || { echo "unexpected files in the bundle image:" >&2; echo "$extra" >&2; exit 1; }
labels=$(buildah inspect --format '{{index .OCIv1.Config.Labels "operators.operatorframework.io.bundle.package.v1"}}' "$img")
[[ "$labels" == podset-operator ]] || { echo "bundle image package label is '$labels'" >&2; exit 1; }
[[ -z "${OUT:-}" ]] || save_archive "$img" "$OUT/bundle.tar"
echo "bundle image $img: holds exactly bundle/ (manifests, metadata, tests/scorecard) and /licenses/LICENSE"
