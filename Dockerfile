# Builds the manager image. Multi-stage: the Go toolchain stays in the builder,
# the final image holds only the static binary.
#
# The builder runs on the build machine's platform and cross-compiles for the
# target one (make docker-buildx builds every platform of PLATFORMS this way):
# no RUN step ever needs an emulator, and Go needs no C toolchain for it.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Download the modules first, in their own layer, so that source changes do not
# invalidate the module cache.
COPY go.mod go.mod
COPY go.sum go.sum
RUN go mod download

# The manager is the root package (main.go) plus the API types and the
# controllers it imports.
COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/

# CGO_ENABLED=0: a static binary, since the distroless base has no libc.
# TARGETOS and TARGETARCH are the platform being built, which docker buildx
# and buildah set for each platform of --platform.
# (No -a: a fresh builder has nothing stale to rebuild, and -a would also
# ignore a build cache mounted into the build.)
# -gcflags=all=-dwarf=false: no DWARF debug information, as the Makefile
# compiles (so a build cache mounted into the build is shared with it); a
# panic's stack trace and a profile use the symbol and line tables, which stay.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -gcflags=all=-dwarf=false -o manager .

# distroless/static: no shell or package manager to attack; :nonroot runs as
# UID/GID 65532, which satisfies the Deployment's runAsNonRoot.
FROM gcr.io/distroless/static:nonroot
# The labels and the license that Red Hat's certification (preflight) and
# OpenShift's catalogs look for. make docker-build and docker-buildx pass the
# Makefile's VERSION; the default is the same (hack/test-manager-image.sh
# holds the two together).
ARG VERSION=0.5.0
LABEL name="podset-operator" \
      vendor="Example" \
      version="${VERSION}" \
      release="${VERSION}" \
      summary="Keeps a set of pods at spec.replicas and rolls them to a changed template" \
      description="The PodSet operator keeps the pods of each PodSet (app.example.com/v1alpha1) at spec.replicas, rolls them to a changed pod template as a Deployment does, in place where it can, rolls back a failing rollout, and reports counts, pod names and conditions." \
      maintainer="PodSet Operator maintainers <podset-operator-maintainers@example.com>"
COPY LICENSE /licenses/LICENSE
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
