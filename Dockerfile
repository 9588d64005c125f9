# A container image of the handoff daemon: built in a Rust image, run from a
# distroless one (glibc and CA certificates, no shell) as a non-root user,
# with the database in a volume at /data. docs/deployment.md: "In a container".
# tests/ops_kit.rs checks the runtime stage against the binary's own flags.

# Debian 12 on both sides, so the binary links against the same glibc.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin handoff \
 && mkdir -p /out/data \
 && cp target/release/handoff /out/handoff

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/handoff /usr/local/bin/handoff
# An empty /data owned by the runtime user: a new named volume mounted there
# takes this ownership, so the daemon can create its database in it.
COPY --from=build --chown=65532:65532 /out/data /data
ENV HANDOFF_DB=/data/handoff.db
VOLUME ["/data"]
EXPOSE 8642
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/handoff"]
# 0.0.0.0 so the published port reaches it; the daemon refuses a
# non-loopback address until an API token exists (docs/deployment.md).
CMD ["serve", "--listen", "0.0.0.0:8642"]
