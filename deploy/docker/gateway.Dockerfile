# svc-code gateway. Build from the repository root:
#   docker build -f deploy/docker/gateway.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
# Module files first, so the download layer is reused until a go.mod or go.sum changes
# (the globs also match when a module has no go.sum yet).
COPY libs/go.* libs/
COPY web/go.* web/
COPY services/gateway/go.* services/gateway/
RUN cd services/gateway && GOWORK=off go mod download
COPY libs/ libs/
COPY web/ web/
COPY services/gateway/ services/gateway/
RUN cd services/gateway && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags='-s -w' -o /out/gateway ./cmd/gateway \
	&& install -d -m 0700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /app/gateway
# The data volume is mounted here; created owned by nonroot so a fresh volume is writable.
COPY --from=build --chown=65532:65532 /out/data /data
ENV SVC_CODE_HOME=/data
USER nonroot:nonroot
ENTRYPOINT ["/app/gateway"]
