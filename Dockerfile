# syntax=docker/dockerfile:1
# KubeBYON single-container self-host. Build from the repo root:
#   docker build -t kubebyon/kubebyon .
# See deployments/single-node/README.md.

# Front-end packages, installed from package-lock.json. Only the two manifests
# are copied so this layer is cached until they change.
FROM node:20-bookworm-slim AS assets
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM golang:1.26-bookworm AS build
ARG VERSION=dev
RUN command -v make >/dev/null || { apt-get update \
      && apt-get install -y --no-install-recommends make \
      && rm -rf /var/lib/apt/lists/*; }
WORKDIR /src
# Modules first, so the download layer survives source edits.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
COPY --from=assets /src/node_modules ./node_modules
# 'make assets' reruns 'npm ci' when node_modules/.package-lock.json is older
# than the manifests; the copy above is already current, so mark it as such
# (this stage has no npm). 'make build' then copies the assets to static/dist
# and builds the static binary bin/kubebyon (CGO_ENABLED=0).
RUN touch node_modules/.package-lock.json \
 && make build VERSION="$VERSION"

FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="KubeBYON" \
      org.opencontainers.image.description="KubeBYON, a self-hosted platform: one container with embedded PostgreSQL" \
      org.opencontainers.image.source="https://github.com/kubebyon/kubebyon" \
      org.opencontainers.image.licenses="Apache-2.0"
# With DATABASE_URL unset, kubebyon runs its own PostgreSQL from the data
# volume, using the server binaries it finds under /usr/lib/postgresql/15/bin.
# The package's default 'main' cluster is not wanted, so postgresql-common is
# told not to create it. tini reaps children and forwards signals, so
# PostgreSQL is stopped cleanly with the container; curl serves the healthcheck.
# HAProxy is the public entry that serve runs (KUBEBYON_EDGE=embedded).
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends postgresql-common; \
    sed -ri 's/^#?[[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf; \
    apt-get install -y --no-install-recommends postgresql-15 ca-certificates curl tini haproxy; \
    rm -rf /var/lib/apt/lists/*
# PostgreSQL refuses to run as root; as this non-root user, kubebyon runs the
# embedded PostgreSQL as itself, owning /data.
RUN groupadd --system --gid 10001 kubebyon \
 && useradd --system --uid 10001 --gid kubebyon --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin kubebyon \
 && mkdir /data && chown kubebyon:kubebyon /data
COPY --from=build /src/bin/kubebyon /usr/local/bin/kubebyon
USER kubebyon
# /data holds the embedded PostgreSQL cluster and the generated secret key
# (unless KUBEBYON_SECRET_KEY is set): back this volume up.
# The public entry runs in this container: clusters' API host names on
# 8443 (publish it as 443) and konnectivity on 8132.
ENV KUBEBYON_DATA_DIR=/data KUBEBYON_LISTEN=:8080 \
    KUBEBYON_EDGE=embedded KUBEBYON_EDGE_API_LISTEN=:8443 KUBEBYON_EDGE_KONNECTIVITY_LISTEN=:8132
VOLUME /data
EXPOSE 8080 8443 8132
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/kubebyon"]
# --migrate applies pending database migrations at start.
CMD ["serve", "--migrate"]
