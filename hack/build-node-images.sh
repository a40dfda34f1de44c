#!/usr/bin/env bash
# Builds the images that the local cluster's real node runs but cannot pull
# here, from the Dockerfiles in test/images/, with buildah (Debian's; no
# daemon): each becomes a docker-archive in OUTDIR, under the name pods use,
# for containerd to import.
#   - registry.k8s.io/pause:3.10: the pod sandbox, a static Go binary
#     (test/images/pause);
#   - docker.io/library/busybox:1.37.0: the operand's default image, from
#     Debian's busybox-static (1.35: the name is the one the operator uses,
#     the content is what Debian ships), also as busybox:1.36.0, the
#     operator-sdk run bundle default. Both are built with a fixed
#     timestamp, so they are one image (one digest) under two tags, as an
#     upstream retag is: the in-place update tests change a pod from one
#     tag to the other;
#   - docker.io/example/busybox:v2: the same content with a
#     label of its own, so another image ID: the in-place update tests'
#     "new image";
#   - quay.io/operator-framework/scorecard-test:$OPERATOR_SDK_VERSION: the
#     scorecard's test program (the binary SCORECARD_TEST, built by
#     hack/build-tool.sh scorecard-test), only when asked for;
#   - quay.io/operator-framework/opm:$OPM_VERSION: busybox with the opm
#     binary OPM in /bin (OLM's unpack Job runs `opm alpha bundle extract`,
#     operator-sdk run bundle's catalog pod `sh -c "opm serve ..."`), and
#     GRPC_HEALTH_PROBE as /bin/grpc_health_probe, as in the original (the
#     readiness probe of the catalog pods that OLM runs for a CatalogSource
#     with spec.image);
#   - quay.io/operator-framework/olm:$OLM_VERSION: busybox with OLM's cpb
#     (the binary CPB) in /bin, the unpack Job's util image (`cp`, `cpb`);
#   - docker.io/example/canary-app:v1: the web server of the canary-analysis
#     scenarios (test/images/canary-app), a static Go binary; its version and
#     failing share are flags, so one image serves every version.
# The Makefile rebuilds them only when they are missing or older than
# their sources: `make real-node-tools` is fast the second time.
#   hack/build-node-images.sh OUTDIR [IMAGE...]   (IMAGE: pause busybox
#   scorecard-test opm olm canary-app; default pause busybox)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
images=("$@")
((${#images[@]})) || images=(pause busybox)
source hack/lib/debian.sh
use_buildah

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# image ARCHIVE NAME CONTEXT DOCKERFILE [BUILDAH-BUD-FLAG...]: build, save,
# and drop it from buildah's storage (nothing left in /var/lib/containers).
image() {
  local archive=$1 name=$2 context=$3 dockerfile=$4
  buildah bud --quiet "${@:5}" -f "$dockerfile" -t "$name" "$context" >/dev/null
  save_archive "$name" "$out/$archive"
  buildah rmi "$name" >/dev/null
  echo "built $name into $out/$archive"
}

for img in "${images[@]}"; do
  case "$img" in
    pause)
      mkdir -p "$work/pause"
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/pause/pause" ./test/images/pause
      image pause.tar registry.k8s.io/pause:3.10 "$work/pause" test/images/pause/Dockerfile ;;
    busybox)
      busybox_rootfs "$work/busybox/rootfs"
      image busybox.tar docker.io/library/busybox:1.37.0 "$work/busybox" test/images/busybox/Dockerfile --timestamp 0
      # operator-sdk run bundle's and bundle-upgrade's default init image
      # (bundle-upgrade has no flag to change it): the same stand-in.
      image busybox-1.36.0.tar docker.io/library/busybox:1.36.0 "$work/busybox" test/images/busybox/Dockerfile --timestamp 0
      image busybox-v2.tar docker.io/example/busybox:v2 "$work/busybox" test/images/busybox/Dockerfile \
        --timestamp 0 --label org.example.podset-e2e.variant=v2 ;;
    scorecard-test)
      : "${SCORECARD_TEST:?the scorecard-test binary (make olm-tools builds it)}" "${OPERATOR_SDK_VERSION:?}"
      mkdir -p "$work/scorecard-test"
      cp "$SCORECARD_TEST" "$work/scorecard-test/scorecard-test"
      image scorecard-test.tar "quay.io/operator-framework/scorecard-test:$OPERATOR_SDK_VERSION" "$work/scorecard-test" test/images/scorecard-test/Dockerfile ;;
    opm)
      : "${OPM:?the opm binary (make olm-tools builds it)}" "${OPM_VERSION:?}"
      : "${GRPC_HEALTH_PROBE:?the grpc_health_probe binary (the Makefile builds it)}"
      busybox_rootfs "$work/opm/rootfs"
      mkdir -p "$work/opm/configs"
      cp "$OPM" "$work/opm/opm"
      cp "$GRPC_HEALTH_PROBE" "$work/opm/grpc_health_probe"
      image opm.tar "quay.io/operator-framework/opm:$OPM_VERSION" "$work/opm" test/images/opm/Dockerfile ;;
    olm)
      : "${CPB:?the cpb binary (hack/build-tool.sh cpb builds it)}" "${OLM_VERSION:?}"
      busybox_rootfs "$work/olm/rootfs"
      cp "$CPB" "$work/olm/cpb"
      image olm.tar "quay.io/operator-framework/olm:$OLM_VERSION" "$work/olm" test/images/olm/Dockerfile ;;
    canary-app)
      mkdir -p "$work/canary-app"
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/canary-app/canary-app" ./test/images/canary-app
      image canary-app.tar docker.io/example/canary-app:v1 "$work/canary-app" test/images/canary-app/Dockerfile ;;
    *) echo "unknown image $img" >&2; exit 2 ;;
  esac
done
