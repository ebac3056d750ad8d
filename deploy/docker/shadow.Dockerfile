# svc-code shadow. Build from the repository root:
#   docker build -f deploy/docker/shadow.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
# Module files first, so the download layer is reused until a go.mod or go.sum changes
# (the globs also match when a module has no go.sum yet).
COPY libs/go.* libs/
COPY deploy/helpers/go.* deploy/helpers/
COPY services/shadow/go.* services/shadow/
RUN cd services/shadow && GOWORK=off go mod download
COPY libs/ libs/
COPY deploy/helpers/ deploy/helpers/
COPY services/shadow/ services/shadow/
RUN cd services/shadow && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags='-s -w' -o /out/shadow ./cmd/shadow

# shadow runs git and shells, so it gets a small Debian rather than distroless.
FROM debian:bookworm-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends bash git curl ca-certificates \
	&& rm -rf /var/lib/apt/lists/* \
	&& groupadd --gid 65532 nonroot \
	&& useradd --uid 65532 --gid 65532 --create-home --home-dir /home/nonroot --shell /bin/bash nonroot \
	&& install -d -o 65532 -g 65532 -m 0700 /data
COPY --from=build /out/shadow /app/shadow
COPY deploy/helpers/shadow-git deploy/helpers/shadow-query deploy/helpers/shadow-git-helper.md deploy/helpers/install.sh /opt/svc-code/helpers/
# Same user id as the distroless images, so all services can share the data volume.
ENV SVC_CODE_HOME=/data HOME=/home/nonroot SHELL=/bin/bash
USER nonroot:nonroot
WORKDIR /home/nonroot
# The companion helpers, installed at build time for the image's user
# (~/.local/bin/shadow-git, ~/.local/bin/shadow-query, ~/.claude/agents/).
RUN bash /opt/svc-code/helpers/install.sh
ENTRYPOINT ["/app/shadow"]
