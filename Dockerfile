# Images of the two commands, static binaries on a distroless base that
# runs as the non-root user 65532 (the manifests' runAsUser):
#
#   make image                       # both, tagged as deploy/k8s/images says
#   docker build --target ingest -t geoshard/ingest:TAG .
#   docker build --target reshard -t geoshard/reshard:TAG .
#
# The builder stage downloads modules once per go.sum and builds with
# CGO off, so the binaries need no libc.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/ingest ./cmd/ingest && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/reshard ./cmd/reshard

FROM gcr.io/distroless/static-debian12:nonroot AS ingest
COPY --from=build /out/ingest /ingest
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["/ingest"]

FROM gcr.io/distroless/static-debian12:nonroot AS reshard
COPY --from=build /out/reshard /reshard
USER 65532:65532
ENTRYPOINT ["/reshard"]
