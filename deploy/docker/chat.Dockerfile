# svc-code chat. Build from the repository root:
#   docker build -f deploy/docker/chat.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
# Module files first, so the download layer is reused until a go.mod or go.sum changes
# (the globs also match when a module has no go.sum yet).
COPY libs/go.* libs/
COPY services/chat/go.* services/chat/
RUN cd services/chat && GOWORK=off go mod download
COPY libs/ libs/
COPY services/chat/ services/chat/
RUN cd services/chat && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags='-s -w' -o /out/chat ./cmd/chat

# chat starts the agents (Claude Code and Codex, both npm packages) and they run
# shells, git and the helpers in the projects: Node on Debian, not distroless.
FROM node:20-bookworm-slim
ARG CLAUDE_CODE_VERSION=2.1.330
ARG CODEX_VERSION=0.169.0
RUN apt-get update \
	&& apt-get install -y --no-install-recommends bash git curl ca-certificates ripgrep \
	&& rm -rf /var/lib/apt/lists/* \
	&& npm install -g --omit=dev "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" "@openai/codex@${CODEX_VERSION}" \
	&& npm cache clean --force \
	&& groupadd --gid 65532 nonroot \
	&& useradd --uid 65532 --gid 65532 --create-home --home-dir /home/nonroot --shell /bin/bash nonroot \
	&& install -d -o 65532 -g 65532 -m 0700 /data
COPY --from=build /out/chat /app/chat
COPY deploy/helpers/shadow-git deploy/helpers/shadow-query deploy/helpers/shadow-git-helper.md deploy/helpers/install.sh /opt/svc-code/helpers/
# Same user id as the other images, so all services can share the data volume.
ENV SVC_CODE_HOME=/data HOME=/home/nonroot SHELL=/bin/bash
USER nonroot:nonroot
WORKDIR /home/nonroot
# The companion helpers, for the agents: ~/.local/bin/shadow-git and shadow-query,
# ~/.claude/agents/shadow-git-helper.md.
RUN bash /opt/svc-code/helpers/install.sh
ENTRYPOINT ["/app/chat"]
