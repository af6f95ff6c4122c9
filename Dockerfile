# The same shape as the stock CoreDNS image: a static binary at /coredns, numeric non-root
# user, cap_net_bind_service so it can still bind :53. Swap the image of a CoreDNS
# Deployment for this one and nothing else changes.
#
# `make image` builds this image without a docker engine (hack/image, internal/image); this
# file is for docker users and yields the same configuration (user, workdir, ports,
# entrypoint, environment, labels: internal/image TestDockerfileYieldsTheSameConfig).
#   docker build --build-arg GITCOMMIT=$(git describe --dirty --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t gatewaydns-coredns:... .
ARG GO_IMAGE=golang:1.26
ARG DEBIAN_IMAGE=debian:stable-slim
ARG BASE=gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
ARG GITCOMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=${GITCOMMIT}" \
    -o /coredns ./cmd/coredns

FROM --platform=$BUILDPLATFORM ${DEBIAN_IMAGE} AS caps
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get -qq update && apt-get -qq --no-install-recommends install libcap2-bin
COPY --from=build /coredns /coredns
RUN setcap cap_net_bind_service=+ep /coredns

FROM ${BASE}
ARG GITCOMMIT=unknown
ARG REVISION=
ARG LICENSES=NOASSERTION
COPY --from=caps /coredns /coredns
LABEL org.opencontainers.image.source=https://github.com/gatewaydns/gatewaydns \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.version=${GITCOMMIT} \
      org.opencontainers.image.licenses=${LICENSES} \
      org.opencontainers.image.title=gatewaydns-coredns
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /
EXPOSE 53 53/udp
ENTRYPOINT ["/coredns"]
