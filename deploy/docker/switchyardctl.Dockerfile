# syntax=docker/dockerfile:1
# Image of switchyardctl, the admin CLI of the routers.
#
# Build from the repository root (the Go workspace):
#   docker build -f deploy/docker/switchyardctl.Dockerfile --build-arg VERSION=0.1.0 \
#     -t ghcr.io/switchyard-dev/switchyardctl:0.1.0 .
# A static binary (CGO_ENABLED=0) on distroless/static, running as the non-root user 65532.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Module files first, so dependency downloads are cached across source changes.
COPY go.work go.work.sum ./
COPY contract/go.mod contract/
COPY proto/go.mod proto/go.sum proto/
COPY gossip/go.mod gossip/go.sum gossip/
COPY telemetry/go.mod telemetry/go.sum telemetry/
COPY cluster-gateway/go.mod cluster-gateway/go.sum cluster-gateway/
COPY global-router/go.mod global-router/go.sum global-router/
COPY tests/go.mod tests/go.sum tests/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/switchyardctl ./global-router/cmd/switchyardctl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchyardctl /usr/local/bin/switchyardctl
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/switchyardctl"]
