# syntax=docker/dockerfile:1
# Corral image: a Debian bookworm build stage with the toolchain and -dev packages, then a slim
# runtime stage holding the binary, its shared libraries and a default config, run as `corral`.
#   docker build -t corral .          (from the repository root)
#   docker compose -f docker/compose.yml up --build

FROM debian:bookworm AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libboost-dev libboost-system-dev libhiredis-dev libspdlog-dev libyaml-cpp-dev \
      prometheus-cpp-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The release preset builds into build/release; tests need Catch2 and servers, so they are off.
RUN cmake --preset release -DCORRAL_TESTS=OFF \
 && cmake --build build/release --target corral \
 && strip build/release/src/corral \
 && build/release/src/corral --version

# Same release as the build stage, so the shared libraries match what the binary was linked with.
FROM debian:bookworm-slim AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libhiredis0.14 libspdlog1.10 libfmt9 libyaml-cpp0.7 libprometheus-cpp-core1.0 libssl3 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin corral
COPY --from=build /src/build/release/src/corral /usr/local/bin/corral
COPY config/corral.yaml /etc/corral/corral.yaml
# Fails the build (not the first `docker run`) if a runtime library is missing.
RUN corral --version && corral --check-config /etc/corral/corral.yaml >/dev/null
# The image's default config binds loopback; inside a container, listen on every interface.
ENV CORRAL_LISTEN=0.0.0.0:6380 CORRAL_METRICS=0.0.0.0:9121
USER corral
# 6380: RESP clients; 9121: /metrics, /healthz, /readyz. Both must listen on 0.0.0.0 (or the
# container's address) in the config to be reachable: see docker/corral.yaml.
EXPOSE 6380 9121
# No HEALTHCHECK: the image has no HTTP client to probe /healthz with; orchestrators should probe
# http://<container>:9121/healthz (liveness) and /readyz (readiness) themselves.
STOPSIGNAL SIGTERM
ENTRYPOINT ["corral"]
CMD ["-c", "/etc/corral/corral.yaml"]
