# Two images from one file.
#
# The default (the last stage, lab): the release, make dist's lab binary
# alone on Debian's slim image, with no Go toolchain and no source. It runs
# every job on a team's own folder (mounted at /work) or on the library
# built into it; with --build-arg DESKTOP=1 it also holds the X server, VNC
# and RDP servers and viewers that lab vnc drives.
#
#   docker build -t latencylab .
#   docker run --rm -v "$PWD:/work" latencylab test scenarios
#
# The cluster's (--target cluster): the module's source in /src, lab in
# /usr/local/bin, and the caches warm, for ABR sweeps and tunes on a
# cluster (lab/cluster/k8s, docs/cluster.md), whose Jobs read the grids
# and the tune's folders from the source tree, so that a shard starts its
# sessions within seconds rather than after a minute of compiling.
#
#   docker build --target cluster -t ghcr.io/nuvirahub/latencylab:latest .
FROM golang:1.26-bookworm AS cluster

# No cgo. Sweeps and tunes run exact sessions, in WebAssembly, where there
# is no cgo, and the exact mode refuses the OpenH264 presets: nothing they
# run uses the real encoder. Without cgo its binding is a stub
# (agent/encoder/openh264), so the image needs neither libopenh264-dev nor
# a C compiler at run time. Set for every step and for the containers
# alike: the go command's cache is keyed by it, and a shard that ran with
# another setting would rebuild the jobs binary instead of finding it.
ENV CGO_ENABLED=0

WORKDIR /src

# The modules first, so that a change to the source does not download
# them again.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
RUN go build -o /usr/local/bin/lab ./cmd/lab

# The caches, warm for what a shard builds and compiles, filled by a
# one-point sweep of a 2 s scenario, which also checks that the image runs
# a session: the jobs' test binary (lab/jobs, tag jobs) and the exact
# sessions' guest, each built as the lab builds it and kept in
# /root/.cache/latencylab/testbin (internal/testbin: a shard finds them up
# to date and links nothing), and the guest compiled to machine code by
# wazero, in /root/.cache/latencylab/exact (11 s of compiling saved per
# shard). A node whose CPU differs from the build machine's may compile
# the guest again; the sessions' results do not depend on it.
RUN lab sweep -scenarios abr-lossy -threshold 60ms -seeds 1 -warmup 1s -duration 2s -out /tmp/warm \
 && rm -rf /tmp/warm

# The release's build: make dist's, for the platform the image is built
# for (the guest inside is WebAssembly, the same for every platform).
FROM golang:1.26-bookworm AS release
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go run ./internal/release/mkdist -out /dist linux/${TARGETARCH} && mv /dist/lab-linux-${TARGETARCH} /dist/lab

# The slim image: the binary, and the desktop programs when asked for.
FROM debian:bookworm-slim AS lab
ARG DESKTOP=
RUN if [ -n "$DESKTOP" ]; then \
      apt-get update && apt-get install -y --no-install-recommends \
        xvfb x11vnc tigervnc-standalone-server tigervnc-viewer xrdp freerdp2-x11 novnc websockify \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY --from=release /dist/lab /usr/local/bin/lab
WORKDIR /work
ENTRYPOINT ["lab"]
