# syntax=docker/dockerfile:1
# Image of modelsim, the simulated vLLM-compatible model server for tests and demos.
#
# Build from the repository root (the Go workspace):
#   docker build -f deploy/docker/modelsim.Dockerfile --build-arg VERSION=0.1.0 \
#     -t ghcr.io/switchyard-dev/modelsim:0.1.0 .
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
    go build -trimpath -ldflags="-s -w" -o /out/modelsim ./tests/cmd/modelsim

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/modelsim /usr/local/bin/modelsim
USER 65532:65532
EXPOSE 8001
ENTRYPOINT ["/usr/local/bin/modelsim"]
