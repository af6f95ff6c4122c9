# The same shape as the stock CoreDNS image: a static binary at /coredns, numeric non-root
# user, cap_net_bind_service so it can still bind :53. Swap the image of a CoreDNS
# Deployment for this one and nothing else changes.
ARG GO_IMAGE=golang:1.26
ARG DEBIAN_IMAGE=debian:stable-slim
ARG BASE=gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /coredns ./cmd/coredns

FROM --platform=$BUILDPLATFORM ${DEBIAN_IMAGE} AS caps
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get -qq update && apt-get -qq --no-install-recommends install libcap2-bin
COPY --from=build /coredns /coredns
RUN setcap cap_net_bind_service=+ep /coredns

FROM ${BASE}
COPY --from=caps /coredns /coredns
USER 65532:65532
WORKDIR /
EXPOSE 53 53/udp
ENTRYPOINT ["/coredns"]
