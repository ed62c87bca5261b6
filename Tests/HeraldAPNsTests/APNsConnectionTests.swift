import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldTesting
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import Synchronization
import Testing

@testable import HeraldAPNs

/// The provider's HTTP/2 connection (swift-nio-http2) where the provider tests do not reach: retiring a connection
/// with requests in flight, the kernel's dead-peer detection, connects that fail, and a server without HTTP/2.
@Suite("APNsConnection: retiring, dead peers, failed connects, ALPN")
struct APNsConnectionTests {
    @Test func retiredConnectionFinishesWhatItCarriesThenCloses() async throws {
        try await APNsHarness.run { harness in
            harness.double.setResponseDelay(.milliseconds(300))
            let connection = try await Self.connect(to: harness.double)
            let token = harness.provider.tokenIssuer.currentToken().jwt

            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for seed in 1...3 {
                    group.addTask {
                        var headers = HPACKHeaders()
                        headers.add(name: "authorization", value: "bearer \(token)", indexing: .nonIndexable)
                        headers.add(name: "apns-topic", value: APNsHarness.topic)
                        headers.add(name: "apns-push-type", value: "alert")
                        let answer = try await connection.post(
                            path: "/3/device/\(Fixtures.apnsToken(seed))", headers: headers,
                            body: ByteBuffer(string: #"{"aps":{"alert":"retiring"}}"#), timeout: .seconds(10))
                        return answer.status
                    }
                }
                // Retire once all three are on the connection, before any is answered.
                for _ in 0..<500 where connection.requestsInFlight < 3 { try await Task.sleep(for: .milliseconds(2)) }
                #expect(connection.requestsInFlight == 3)
                #expect(connection.retire())
                #expect(!connection.isUsable)
                #expect(connection.channel.isActive)
                #expect(!connection.retire())  // only the first call retires it
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [200, 200, 200])
            // The last answer closes it. The double sees the close on its own event loop, a moment after the client.
            try await connection.channel.closeFuture.get()
            #expect(await eventually(attempts: 100) { harness.double.connectionEvents.contains { $0.kind == .closed } })
        }
    }

    /// Client stream ids end at 2³¹ − 1, so a connection takes a billion streams and no more; here a budget of 2.
    @Test func aConnectionThatUsedItsStreamBudgetTakesNoMoreAndClosesAfterItsLastAnswer() async throws {
        try await APNsHarness.run { harness in
            let connection = try await Self.connect(to: harness.double, streamBudget: 2)
            let token = harness.provider.tokenIssuer.currentToken().jwt
            func post(_ seed: Int) async throws -> Int {
                var headers = HPACKHeaders()
                headers.add(name: "authorization", value: "bearer \(token)", indexing: .nonIndexable)
                headers.add(name: "apns-topic", value: APNsHarness.topic)
                headers.add(name: "apns-push-type", value: "alert")
                return try await connection.post(
                    path: "/3/device/\(Fixtures.apnsToken(seed))", headers: headers,
                    body: ByteBuffer(string: #"{"aps":{"alert":"budget"}}"#), timeout: .seconds(10)
                ).status
            }
            #expect(try await post(1) == 200)
            #expect(connection.isUsable)
            #expect(try await post(2) == 200)
            #expect(!connection.isUsable)
            // The last answer closes it.
            for _ in 0..<1_000 where connection.channel.isActive { try await Task.sleep(for: .milliseconds(5)) }
            #expect(!connection.channel.isActive)
            await #expect(throws: APNsConnection.Failure.notAcceptingStreams) { try await post(3) }
            #expect(harness.double.requests.count == 2)
        }
    }

    #if os(Linux)
        @Test func connectionAsksTheKernelToNoticeADeadPeer() async throws {
            try await APNsHarness.run { harness in
                let connection = try await Self.connect(to: harness.double)
                func tcp(_ option: CInt) async throws -> Int {
                    try await connection.channel.getOption(ChannelOptions.tcpOption(NIOBSDSocket.Option(rawValue: option)))
                }
                #expect(try await connection.channel.getOption(.socketOption(.so_keepalive)) == 1)
                #expect(try await tcp(CInt(TCP_KEEPIDLE)) == 60)
                #expect(try await tcp(CInt(TCP_KEEPINTVL)) == 10)
                #expect(try await tcp(CInt(TCP_KEEPCNT)) == 3)
                #expect(try await tcp(CInt(TCP_USER_TIMEOUT)) == 30_000)
                await connection.close()
            }
        }
    #endif

    @Test func failedConnectIsARetryAndTheNextSendConnectsAgain() async throws {
        let server = try await ClosingServer.start()
        try await APNsHarness.run(configure: { $0.productionURL = "https://127.0.0.1:\(server.port)" }) { harness in
            let first = await harness.send(1)
            #expect(first.isRetry, "\(first)")
            let afterFirst = server.accepted
            #expect(afterFirst >= 1)
            let second = await harness.send(2)
            #expect(second.isRetry, "\(second)")
            #expect(server.accepted > afterFirst)  // a failed connect does not stick to the slot
            #expect(harness.double.requests.isEmpty)
        }
        try await server.close()
    }

    /// Providers that trust the same extra CAs share one TLS context (making one parses the system's CA bundle);
    /// other CAs get a context of their own, which trusts them and not the first ones.
    @Test func providersTrustingTheSameCAsShareOneTLSContext() throws {
        let first = try NIOSSLCertificate.fromPEMBytes(Array(TestCertificates.make().caCertificatePEM.utf8))
        let second = try NIOSSLCertificate.fromPEMBytes(Array(TestCertificates.make().caCertificatePEM.utf8))
        let context = try ProviderTLS.sharedContext(trusting: first, applicationProtocols: ["h2"])
        #expect(try ProviderTLS.sharedContext(trusting: first, applicationProtocols: ["h2"]) === context)
        #expect(try ProviderTLS.sharedContext(trusting: second, applicationProtocols: ["h2"]) !== context)
        #expect(try ProviderTLS.sharedContext(trusting: [], applicationProtocols: ["h2"]) !== context)
    }

    @Test func serverWithoutHTTP2IsARetryNamingTheProtocol() async throws {
        let certificates = try TestCertificates.make()
        let server = try await ClosingServer.start(tls: try certificates.serverTLSConfiguration(applicationProtocols: ["http/1.1"]))
        let caPath = try certificates.writeCA()
        try await APNsHarness.run(configure: {
            $0.productionURL = "https://127.0.0.1:\(server.port)"
            $0.trustedCAPath = caPath
        }) { harness in
            let result = await harness.send(1)
            guard case .retry(let reason, nil) = result else {
                Issue.record("expected a retry, got \(result)")
                return
            }
            #expect(reason.contains("not h2"), "\(reason)")
        }
        try await server.close()
    }
}

extension APNsConnectionTests {
    /// A connection to the double, as the provider opens them.
    static func connect(
        to double: APNsDouble, streamBudget: Int = APNsConnection.defaultStreamBudget
    ) async throws -> APNsConnection {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(double.caPath)]
        tls.applicationProtocols = ["h2"]
        let endpoint = try #require(APNsConnection.Endpoint(baseURL: double.baseURL))
        return try await APNsConnection.connect(
            to: endpoint, tls: try NIOSSLContext(configuration: tls), group: MultiThreadedEventLoopGroup.singleton,
            readyWithin: .seconds(10), streamBudget: streamBudget
        ).get()
    }
}

/// A TCP server that counts connections; without TLS it closes each at once, with TLS it completes the handshake
/// (offering the configuration's ALPN protocols) and then reads and ignores everything.
private final class ClosingServer: Sendable {
    private final class Counter: Sendable {
        let value = Atomic(0)
    }

    let channel: any Channel
    private let counter: Counter

    var port: Int { channel.localAddress?.port ?? 0 }
    var accepted: Int { counter.value.load(ordering: .relaxed) }

    private init(channel: any Channel, counter: Counter) {
        self.channel = channel
        self.counter = counter
    }

    static func start(tls: TLSConfiguration? = nil) async throws -> ClosingServer {
        let context = try tls.map { try NIOSSLContext(configuration: $0) }
        let counter = Counter()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { child in
                counter.value.add(1, ordering: .relaxed)
                guard let context else { return child.close() }
                return child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return ClosingServer(channel: channel, counter: counter)
    }

    func close() async throws { try await channel.close() }
}
