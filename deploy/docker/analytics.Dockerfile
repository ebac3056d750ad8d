# svc-code analytics. Build from the repository root:
#   docker build -f deploy/docker/analytics.Dockerfile .
FROM golang:1.26 AS build
WORKDIR /src
# Module files first, so the download layer is reused until a go.mod or go.sum changes
# (the globs also match when a module has no go.sum yet).
COPY libs/go.* libs/
COPY services/analytics/go.* services/analytics/
RUN cd services/analytics && GOWORK=off go mod download
COPY libs/ libs/
COPY services/analytics/ services/analytics/
RUN cd services/analytics && CGO_ENABLED=0 GOWORK=off go build -trimpath -ldflags='-s -w' -o /out/analytics ./cmd/analytics \
	&& install -d -m 0700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/analytics /app/analytics
# The data volume is mounted here; created owned by nonroot so a fresh volume is writable.
COPY --from=build --chown=65532:65532 /out/data /data
ENV SVC_CODE_HOME=/data
USER nonroot:nonroot
ENTRYPOINT ["/app/analytics"]
