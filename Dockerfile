# Herald in a container: built with the static Swift standard library, run on Debian slim as an unprivileged user,
# SQLite on a volume. CI runs the same build command (.ci/run, "release build").
#
#   docker build -t herald .
#   docker run -d -p 8080:8080 -v herald-data:/var/lib/herald --env-file herald.env herald

FROM swift:6.3-bookworm AS build
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev && rm -rf /var/lib/apt/lists/*
COPY . .
RUN swift build -c release --static-swift-stdlib --product herald \
    && cp .build/release/herald /herald \
    && strip /herald

FROM debian:bookworm-slim
# What the binary still links dynamically (ldd): SQLite, the C++ runtime, zlib; curl for the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-0 libstdc++6 zlib1g ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/herald --shell /usr/sbin/nologin herald \
    && mkdir -p /var/lib/herald && chown herald /var/lib/herald
COPY --from=build /herald /usr/local/bin/herald
USER herald
WORKDIR /var/lib/herald
ENV HERALD_DATABASE_URL=/var/lib/herald/herald.sqlite
VOLUME /var/lib/herald
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s CMD curl -fsS http://127.0.0.1:8080/readyz || exit 1
# SIGTERM starts Herald's graceful shutdown (HERALD_SHUTDOWN_TIMEOUT, 10 s); docker stop waits 10 s by default.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["serve"]
