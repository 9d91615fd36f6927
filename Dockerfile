# syntax=docker/dockerfile:1
#
# hccl_exporter container image.
#
#   make image IMAGE=<registry>/hccl_exporter:$(cat VERSION)
#
# or, multi-arch:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     -t <registry>/hccl_exporter:$(cat VERSION) --push .
#
# The version is not a build argument: the binary embeds the VERSION file.
#
# Stage 1 compiles on the build machine's own platform ($BUILDPLATFORM) and
# cross-compiles for the target with GOOS/GOARCH: no emulation is needed for an
# arm64 image (Atlas 800/900 training servers are mostly aarch64 Kunpeng hosts).
# The binary is static (CGO_ENABLED=0): it does not link against anything in
# the runtime image.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build

ARG TARGETOS=linux
ARG TARGETARCH
ARG REVISION=unknown
ARG BRANCH=unknown
ARG BUILD_USER=docker
ARG BUILD_DATE=unknown

WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=${BUILD_USER} \
        -X github.com/prometheus/common/version.BuildDate=${BUILD_DATE}" \
      -o /out/hccl_exporter ./cmd/hccl_exporter

# Stage 2: the runtime image.
#
# Why debian:bookworm-slim and not distroless/static or busybox: the exporter
# itself is static, but it runs `npu-smi`, which is NOT part of this image. It
# is the host's binary from the Ascend driver package, mounted read-only from
# the host, and it is dynamically linked against glibc and against the driver's
# own libraries (libdcmi.so, libdrvdsmi*.so, … under /usr/local/Ascend/driver
# and /usr/local/dcmi, also mounted from the host). An image without glibc
# (distroless/static, musl busybox) cannot even load it. Slim Debian gives glibc
# and little else. If you only run the log collectors (--no-collector.npusmi
# --no-collector.headroom), any base would do.
#
# What npu-smi needs at run time (see docs/deploy.md for docker and Kubernetes):
#   device nodes  /dev/davinci0 … /dev/davinciN (one per chip), /dev/davinci_manager,
#                 /dev/devmm_svm, /dev/hisi_hdc
#   read-only     /usr/local/Ascend/driver (driver libraries and tools),
#                 /usr/local/sbin/npu-smi (the binary), /usr/local/dcmi (libdcmi),
#                 /etc/ascend_install.info (driver install record npu-smi checks)
#   identity      root, or a user in the group that owns the device nodes
#                 (HwHiAiUser); otherwise npu-smi prints only
#                 "dcmi module initialize failed. ret is -8005".
FROM debian:bookworm-slim

# The driver libraries npu-smi loads, at the paths the driver installs them on
# the host (mounted read-only at the same paths).
ENV LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64/driver:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64:/usr/local/dcmi

COPY --from=build /out/hccl_exporter /bin/hccl_exporter

# Default to an unprivileged numeric user: no RUN step in this stage, so a
# cross-platform build needs no emulation, and the log-only use needs nothing
# more. Reading the device nodes for npu-smi needs root or the device group:
# the Kubernetes DaemonSet sets runAsUser 0 and says why; with docker use
# `--user 0` (or `--group-add <gid of HwHiAiUser>`) and `--device` flags.
USER 65532:65532

EXPOSE 9842
ENTRYPOINT ["/bin/hccl_exporter"]
