# syntax=docker/dockerfile:1
#
# capo-controller-manager image, the online equivalent of hack/image.sh (which builds the same
# image offline, reproducibly, without a container engine; docs/install.md): a static binary
# (glibc linked in with +crt-static) on an empty base with only /manager, /etc/passwd and
# /etc/group with the "nonroot" user 65532 (which config/manager/manager.yaml requires),
# /etc/nsswitch.conf, Debian's CA bundle and /tmp.
#
#   docker build -t capo-controller-manager:dev .
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=v0.2.0 \
#     -t <registry>/capo-controller-manager:v0.2.0 .
#
# The build stage runs on the target platform (emulated for foreign ones), so the Rust target
# is the build machine's own (x86_64- or aarch64-unknown-linux-gnu); naming it explicitly keeps
# RUSTFLAGS off build scripts and proc macros. The flags are hack/image.sh's.

ARG RUST_VERSION=1.95.0

FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
# Only what the build needs: the build context's target/ and local files stay out.
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
COPY crates ./crates
COPY hack/lib/oci.sh ./hack/lib/oci.sh
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    target="$(uname -m)-unknown-linux-gnu" \
 && RUSTFLAGS="-C target-feature=+crt-static --remap-path-prefix=/src=/capo --remap-path-prefix=/usr/local/cargo=/cargo --remap-path-prefix=/src/target=/target" \
    cargo build --release --locked --target "$target" -p capo-manager --bin capo-controller-manager \
 && install -D -m 0755 "target/$target/release/capo-controller-manager" /out/rootfs/manager
# The same base files as hack/image.sh (hack/lib/oci.sh); the static binary needs nothing else.
RUN bash -c 'set -euo pipefail; say() { echo "$*"; }; source hack/lib/oci.sh; oci_base_rootfs /out/rootfs' \
 && /out/rootfs/manager --help >/dev/null

FROM scratch
ARG VERSION=dev
LABEL org.opencontainers.image.title=capo-controller-manager \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/rootfs/ /
USER 65532:65532
ENTRYPOINT ["/manager"]
