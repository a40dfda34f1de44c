#!/usr/bin/env bash
# Builds the catalog image with `make catalog-build`, as a user would, with
# buildah (no daemon), over the stand-in of its base image
# quay.io/operator-framework/opm (test/images/opm, the pinned opm; the archive
# hack/build-node-images.sh makes, OPM_ARCHIVE), and checks it: /configs
# holds exactly catalog/, opm's serve cache was built into it, and it carries
# the file-based catalog label. With OUT set, it also saves the image as
# OUT/catalog.tar (a docker-archive) for the real node's registry.
#   OPM_ARCHIVE=bin/node-images/opm.tar [OUT=DIR] hack/test-catalog-image.sh [IMAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
source hack/lib/debian.sh
use_buildah
img=${1:-localhost/podset-operator-catalog:test-$$}
# The base, under the name catalog.Dockerfile uses; it stays in buildah's
# storage as a cache, as the manager's base stand-ins do.
buildah pull --quiet "docker-archive:${OPM_ARCHIVE:?the opm stand-in archive}" >/dev/null
make --no-print-directory catalog-build CONTAINER_TOOL=buildah CATALOG_IMG="$img" >/dev/null

ctr=$(buildah from "$img")
cleanup() { buildah rm "$ctr" >/dev/null || true; buildah rmi "$img" >/dev/null || true; }
trap cleanup EXIT
fail() { echo "catalog image $img: $*" >&2; exit 1; }
root=$(buildah mount "$ctr")
diff -r catalog "$root/configs" || fail "/configs is not catalog/"
[[ -n "$(ls -A "$root/tmp/cache" 2>/dev/null)" ]] || fail "no serve cache in /tmp/cache"
label=$(buildah inspect --format '{{index .OCIv1.Config.Labels "operators.operatorframework.io.index.configs.v1"}}' "$img")
[[ "$label" == /configs ]] || fail "the catalog label is '$label'"
buildah umount "$ctr" >/dev/null
[[ -z "${OUT:-}" ]] || save_archive "$img" "$OUT/catalog.tar"
echo "catalog image $img: /configs is catalog/, serve cache built, file-based catalog label"
