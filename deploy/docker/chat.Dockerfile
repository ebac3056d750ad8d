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
RUN cd services/chat && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags='-s -w' -o /out/chat ./cmd/chat \
	&& install -d -m 0700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/chat /app/chat
# The data volume is mounted here; created owned by nonroot so a fresh volume is writable.
COPY --from=build --chown=65532:65532 /out/data /data
ENV SVC_CODE_HOME=/data
USER nonroot:nonroot
ENTRYPOINT ["/app/chat"]
