#!/usr/bin/env bash
# Builds the images of an earlier release, from git history, for the upgrade
# tests (make test-olm-real): its manager image and its bundle image, as
# docker-archives in OUTDIR named after the release's own IMG and BUNDLE_IMG
# (quay.io/example/podset-operator:vX and ...-bundle:vX), for the real node's
# registry. REV is the commit of that release (Makefile UPGRADE_FROM_REV).
#
# The release's sources and bundle/ are used as they were, with two
# build-file changes, both fixes made since that release:
#   - its Dockerfile ran `go build -a`, which ignores the build cache that
#     the test mounts into the builder (a full compile on every run); today's
#     Dockerfile is the same but for that flag, and copies internal/ too,
#     which that release did not have (an empty one is made, and today's
#     .dockerignore, which lets it into the context, is used), and the
#     LICENSE, which that release did not have either (today's is copied;
#     the release's version goes into the image's labels);
#   - its .dockerignore kept bundle/ out of every build context, so its
#     `make bundle-build` failed; today's per-Dockerfile ignore file for
#     bundle.Dockerfile is added.
#   hack/build-previous-release.sh REV OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
rev=$1
out=$(mkdir -p "$2" && cd "$2" && pwd)
source hack/lib/debian.sh
use_buildah
hack/build-base-images.sh

makevar() { git show "$rev:Makefile" | sed -n "s/^$1 ?= //p"; }
version=$(makevar VERSION)
base=$(makevar IMAGE_TAG_BASE)
[[ -n "$version" && -n "$base" ]] || { echo "no VERSION or IMAGE_TAG_BASE in the Makefile of $rev" >&2; exit 1; }
img=$base:v$version bundle_img=$base-bundle:v$version

work=$(mktemp -d)
trap 'rm -rf "$work"; buildah rmi "$img" "$bundle_img" >/dev/null 2>&1 || true' EXIT
mkdir "$work/src"
git archive "$rev" | tar -x -C "$work/src"
cp Dockerfile .dockerignore bundle.Dockerfile.dockerignore LICENSE "$work/src/"
mkdir -p "$work/src/internal"

(cd "$work/src" && buildah bud --quiet -f Dockerfile -t "$img" --build-arg VERSION="$version" \
  --build-arg TARGETOS=linux --build-arg TARGETARCH="$(go env GOARCH)" \
  -v "$(go env GOMODCACHE):/go/pkg/mod" -v "$(go env GOCACHE):/root/.cache/go-build" . >/dev/null)
(cd "$work/src" && buildah bud --quiet -f bundle.Dockerfile -t "$bundle_img" . >/dev/null)
for pair in "manager:$img" "bundle:$bundle_img"; do
  kind=${pair%%:*} name=${pair#*:}
  save_archive "$name" "$out/$kind-$rev.tar"
  echo "built $name (release $version, $rev) into $out/$kind-$rev.tar"
done
