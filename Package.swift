// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldDelivery", targets: ["HeraldDelivery"]),
        .library(name: "HeraldProviderKit", targets: ["HeraldProviderKit"]),
        .library(name: "HeraldAPNs", targets: ["HeraldAPNs"]),
        .library(name: "HeraldFCM", targets: ["HeraldFCM"]),
        .library(name: "HeraldWebPush", targets: ["HeraldWebPush"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        .library(name: "HeraldTesting", targets: ["HeraldTesting"]),
        .library(name: "HeraldActivities", targets: ["HeraldActivities"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        // Domain: devices, notifications, the delivery pipeline, store and provider protocols.
        .target(
            name: "HeraldCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The delivery engine (docs/architecture.md): the send pipeline, group commit, the slot pool, the outbox
        // scheduler, the sender rendezvous and the pure attempt policy, over Core's store and provider protocols.
        .target(
            name: "HeraldDelivery",
            dependencies: [
                "HeraldCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "DequeModule", package: "swift-collections"),  // the engine's queues
            ],
            swiftSettings: swiftSettings
        ),
        // What every push provider shares (docs/providers.md): its description and limits, the configuration and
        // trusted-CA loading, the attempt loop (credential renewal, resend once, metrics, logs), the check's wording.
        .target(
            name: "HeraldProviderKit",
            dependencies: [
                "HeraldCore",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // APNs: provider tokens (ES256 JWT), the HTTP/2 client and the PushProvider for Apple devices.
        .target(
            name: "HeraldAPNs",
            dependencies: [
                "HeraldCore", "HeraldProviderKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // Web Push: RFC 8291 message encryption and RFC 8292 VAPID for browsers' push services.
        .target(
            name: "HeraldWebPush",
            dependencies: [
                "HeraldCore", "HeraldProviderKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings),
        // FCM: the service account's OAuth tokens (RS256 JWT), the HTTP v1 client and the PushProvider for FCM devices.
        .target(
            name: "HeraldFCM",
            dependencies: [
                "HeraldCore", "HeraldProviderKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // Storage: SQLite (GRDB), PostgreSQL (PostgresNIO) and in-memory implementations of the HeraldCore store protocols.
        .target(
            name: "HeraldStore",
            dependencies: [
                "HeraldCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),  // sqlite3_wal_hook (WALCheckpointer)
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Transport: the connection guard (its state machine a value of its own), the WebSocket session, the log line
        // writer. NIO and HummingbirdCore only: no routes, no domain.
        .target(
            name: "HeraldTransport",
            dependencies: [
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),  // WebSocketMessage
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // HTTP API: Hummingbird routes, one folder per API dialect, configuration, the composition root.
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldCore", "HeraldDelivery", "HeraldProviderKit", "HeraldAPNs", "HeraldFCM", "HeraldStore", "HeraldTransport",
                "HeraldActivities",
                "HeraldWebPush",  // the web app's inbox lists notifications as its service worker receives them; callbacks' egress
                .product(name: "AsyncHTTPClient", package: "async-http-client"),  // signed callbacks (Callbacks/)
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "DequeModule", package: "swift-collections"),  // the WebSocket hub's confirmation deadlines
            ],
            // Embedded in the binary (`PackageResources.openapi_yaml`, `PackageResources.overview_mustache`, …):
            // `herald` runs with nothing beside it.
            resources: [.embedInCode("Resources/openapi.yaml")]
                + ["header", "footer", "login", "message", "overview", "notifications", "live", "notification", "device", "send"]
                .map { .embedInCode("Resources/Admin/\($0).mustache") }
                + [.embedInCode("Resources/Admin/style.css")]
                // The web app at /app (WebAppController).
                + ["index.html", "app.js", "db.js", "e2e.js", "topics.js", "app.css", "sw.js", "manifest.webmanifest", "icon192.png", "icon512.png", "maskable512.png",
                    "badge96.png"].map { .embedInCode("Resources/App/\($0)") },
            swiftSettings: swiftSettings
        ),
        // Test support shared by tests and benchmarks: the APNs and FCM doubles, test keys, a test clock.
        .target(
            name: "HeraldTesting",
            dependencies: [
                "HeraldCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),  // RS256 for the FCM double's service accounts
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),  // the FCM double's HTTP/1.1 side
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // PushWard's activities (issue 31): requests, template rules, the state machine, eviction, server-managed dues, the
        // Live Activity message and the API's JSON, and the service and dispatcher that run them on Core's store and send
        // pipeline (issue 38). No socket, no database, no provider, no HTTP.
        .target(
            name: "HeraldActivities",
            dependencies: [
                "HeraldCore", "HeraldDelivery",  // the dispatcher sends through SendPipeline
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore", "HeraldProviderKit", "HeraldServer", "HeraldStore", "HeraldTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            ],
            swiftSettings: swiftSettings
        ),
        // The benchmark: drives a real `herald serve` child process and an in-process APNs double (docs/performance.md).
        .executableTarget(
            name: "herald-bench",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldTesting",
                "HeraldAPNs",  // scenario b2: Herald's APNs connection against AsyncHTTPClient
                "HeraldWebPush",  // scenario 1 for Web Push: the double's own limit with Herald's encryption and VAPID
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),  // scenario 7: a database per run
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldWebPushTests",
            dependencies: [
                "HeraldWebPush", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),  // the provider's clients per host
                // scripts/webpush-verify.py, with PyPI's http-ece and py-vapid
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings),
        // The delivery engine without a server or a socket: the in-memory store, fakes and a test clock.
        .testTarget(
            name: "HeraldDeliveryTests",
            dependencies: [
                "HeraldCore", "HeraldDelivery", "HeraldStore", "HeraldTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),  // the pw1 vectors' nonces (E2EEnvelopeTests)
            ],
            // PushWard's pw1 vectors, read from the source tree (E2EEnvelopeTests).
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        // The domain services (registration, API tokens, daily limits) over an in-memory store: no server, no socket.
        .testTarget(
            name: "HeraldAccountsTests",
            dependencies: ["HeraldCore", "HeraldStore", "HeraldTesting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldAPNsTests",
            dependencies: [
                "HeraldAPNs", "HeraldProviderKit", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),  // the header errors it raises
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldFCMTests",
            dependencies: [
                "HeraldFCM", "HeraldProviderKit", "HeraldTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // One suite of provider cases (dead token, retry-after, credential renewal, resend once, permanent failure) run
        // over every provider through an adapter each: APNs and FCM against their doubles, and a stub provider.
        .testTarget(
            name: "HeraldProviderContractTests",
            dependencies: [
                "HeraldProviderKit", "HeraldAPNs", "HeraldFCM", "HeraldWebPush", "HeraldTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: [
                "HeraldStore", "HeraldTesting",
                .product(name: "GRDB", package: "GRDB.swift"),  // migration tests
                .product(name: "PostgresNIO", package: "postgres-nio"),  // a schema per test
            ],
            swiftSettings: swiftSettings),
        // The connection guard's state machine, the connection accounting and the log writer: no server, no socket.
        .testTarget(
            name: "HeraldTransportTests",
            dependencies: ["HeraldTransport", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                "HeraldServer", "HeraldDelivery", "HeraldTesting", "HeraldTransport", "HeraldActivities",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOEmbedded", package: "swift-nio"),  // a channel whose writes never finish (WebSocketHubTests)
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // Child processes (`herald serve`, systemd-analyze): Foundation's Process can crash a test process
                // that holds many sockets (swift-corelibs-foundation#5472).
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "PostgresNIO", package: "postgres-nio"),  // a database per multi-instance test
                .product(name: "Prometheus", package: "swift-prometheus"),  // a registry of its own (MetricsTests)
                .product(name: "GRDBSQLite", package: "GRDB.swift"),  // a second connection that holds SQLite's write lock
            ],
            // Home Assistant's relay fixtures, read from the source tree (HomeAssistantRelayFixtureTests).
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldActivitiesTests",
            dependencies: [
                "HeraldActivities", "HeraldCore", "HeraldDelivery", "HeraldStore", "HeraldTesting",  // the service's unit tests: the in-memory store
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
    ]
)
