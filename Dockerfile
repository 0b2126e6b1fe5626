# syntax=docker/dockerfile:1
#
# capo-controller-manager image: a static (musl) binary on distroless/static, running as the
# distroless "nonroot" user (65532), which config/manager/manager.yaml also asks for.
#
#   docker build -t capo-controller-manager:dev .
#   docker buildx build --platform linux/amd64,linux/arm64 -t <registry>/capo-controller-manager:<tag> .
#
# The build stage runs on the target platform (emulated for foreign ones), so the Rust target
# is simply the build machine's architecture with musl.

ARG RUST_VERSION=1.95.0

FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the build needs: the build context's target/ and local files stay out.
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
COPY crates ./crates
RUN rustup target add "$(uname -m)-unknown-linux-musl"
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    target="$(uname -m)-unknown-linux-musl" \
 && cargo build --release --locked --target "$target" --bin capo-controller-manager \
 && install -D -m 0755 "target/$target/release/capo-controller-manager" /out/manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
