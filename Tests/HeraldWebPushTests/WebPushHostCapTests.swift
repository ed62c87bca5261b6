import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldWebPush

/// The per-host cap over real sockets, decided by events (what the double holds), not by how fast the machine is: a
/// silent push service gets at most `maximumPerHost` requests at once, a send beyond them answers "retry later" at once
/// (it gives its delivery slot back instead of waiting), and another push service is not held up by it.
@Suite("Web Push per-host cap")
struct WebPushHostCapTests {
    static func device(_ subscription: WebPushDouble.Subscription) -> Device {
        Device(
            userIDHash: "u", secretHash: "s", platform: .webpush, environment: .production, token: subscription.endpoint,
            createdAt: Date(), updatedAt: Date(),
            addressData: WebPushKeys(p256dh: subscription.subscriber.p256dh, auth: subscription.subscriber.authText).addressData)
    }

    static func notification() -> PushNotification {
        PushNotification(
            deviceID: UUID(), pushType: .alert, priority: 10, collapseID: nil, payload: Data(#"{"title":"T","body":"B"}"#.utf8),
            quotaDay: nil, createdAt: Date(), expiresAt: Date().addingTimeInterval(600))
    }

    @Test func aFullHostAnswersRetryAtOnceAndAnotherServiceIsNotHeldUp() async throws {
        let silent = try await WebPushDouble.start()
        let fast = try await WebPushDouble.start()
        let configuration = WebPushConfiguration(
            subject: "mailto:ops@herald.test", vapidPrivateKey: VAPIDKey.generate(), allowedHosts: ["127.0.0.1"],
            trustedCAPath: silent.caPath, requestTimeout: .seconds(600), connectTimeout: .seconds(120), maximumPerHost: 2)
        // Connects get 120 s: at the 5 s default a busy full run once timed out the second held send's TLS handshake
        // (answered "retry"), and the double never held two.
        let provider = try WebPushProvider(configuration: configuration)
        silent.failNext(2, .init(status: 201, delay: .seconds(600)))  // held until the double shuts down
        let silentDevice = Self.device(silent.makeSubscription())

        let held = Task {
            await withTaskGroup(of: DeliveryResult.self) { group in
                for _ in 0..<2 { group.addTask { await provider.send(Self.notification(), to: silentDevice) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(await eventually(attempts: 2_400) { silent.inFlight == 2 })
        let host = "127.0.0.1:\(silent.port)"
        #expect(provider.hosts.inFlight(to: host) == 2)

        // The third finds the gate full: answered at once, nothing sent.
        let third = await provider.send(Self.notification(), to: silentDevice)
        guard case .retry(let reason, let after) = third else {
            Issue.record("expected a retry, got \(third)")
            return
        }
        #expect(reason.contains("2 requests in flight"), "\(reason)")
        #expect(after == .seconds(1))
        #expect(silent.requests.count == 2)
        #expect(silent.inFlight == 2)

        // Another service is reached while the silent one still holds its two.
        let fastResult = await provider.send(Self.notification(), to: Self.device(fast.makeSubscription()))
        #expect(fastResult == .delivered(providerMessageID: "/message/1"))
        #expect(silent.inFlight == 2)

        try await silent.shutdown()  // the held requests end (connection closed): retried later
        let results = await held.value
        #expect(results.allSatisfy { if case .retry = $0 { true } else { false } }, "\(results)")
        #expect(provider.hosts.gateCount == 0, "a host's gate state is freed once nothing is in flight")
        try await provider.shutdown()
        try await fast.shutdown()
    }
}

/// The provider's clients: one per host, following its vetted addresses, at most `maximumClients`, idle ones evicted.
@Suite("Web Push host clients")
struct WebPushHostClientTests {
    private static func hosts(maximumClients: Int = 4, clock: TestClock = TestClock(Date())) -> WebPushHosts {
        WebPushHosts(
            configuration: .init(), eventLoopGroup: HTTPClient.defaultEventLoopGroup, maximumPerHost: 4, retirement: .zero,
            maximumClients: maximumClients, idleTimeout: 300, clock: clock)
    }

    private static func admitted(_ admission: WebPushHosts.Admission) -> HTTPClient? {
        if case .admitted(let client) = admission { client } else { nil }
    }

    @Test func aHostKeepsItsClientWhileItsAddressIsStillVettedAndGetsANewOneWhenNot() async throws {
        let hosts = Self.hosts()
        let first = try #require(IPAddressBytes("142.250.185.74"))
        let second = try #require(IPAddressBytes("142.250.185.75"))
        let third = try #require(IPAddressBytes("142.250.185.76"))
        let key = "fcm.googleapis.com:443"
        let a = try #require(Self.admitted(hosts.begin(host: key, name: "fcm.googleapis.com", addresses: [first, second])))
        hosts.end(host: key, client: a)
        let b = try #require(Self.admitted(hosts.begin(host: key, name: "fcm.googleapis.com", addresses: [second, first])))
        hosts.end(host: key, client: b)
        #expect(a === b)
        let c = try #require(Self.admitted(hosts.begin(host: key, name: "fcm.googleapis.com", addresses: [third])))
        hosts.end(host: key, client: c)
        #expect(c !== a)
        let other = try #require(
            Self.admitted(hosts.begin(host: "web.push.apple.com:443", name: "web.push.apple.com", addresses: [third])))
        hosts.end(host: "web.push.apple.com:443", client: other)
        #expect(other !== c)
        #expect(hosts.gateCount == 0)
        await hosts.shutdown()
        guard case .shutDown = hosts.begin(host: key, name: "fcm.googleapis.com", addresses: [third]) else {
            Issue.record("a shut-down set still admitted a request")
            return
        }
    }

    @Test func aThousandHostsKeepAtMostTheCapOfClientsAndNoGateState() async throws {
        let hosts = Self.hosts(maximumClients: 4)
        let address = try #require(IPAddressBytes("142.250.185.74"))
        for port in 1...1_000 {
            let key = "push.example:\(port)"
            let client = try #require(Self.admitted(hosts.begin(host: key, name: "push.example", addresses: [address])))
            hosts.end(host: key, client: client)
            #expect(hosts.clientCount <= 4)
        }
        #expect(hosts.gateCount == 0)
        await hosts.shutdown()
    }

    @Test func whenEveryClientIsBusyANewHostIsToldToRetryAndIdleOnesAreEvictedAfterTheirTimeout() async throws {
        let clock = TestClock(Date())
        let hosts = Self.hosts(maximumClients: 2, clock: clock)
        let address = try #require(IPAddressBytes("142.250.185.74"))
        let a = try #require(Self.admitted(hosts.begin(host: "a.example:443", name: "a.example", addresses: [address])))
        let b = try #require(Self.admitted(hosts.begin(host: "b.example:443", name: "b.example", addresses: [address])))
        guard case .clientsBusy(limit: 2) = hosts.begin(host: "c.example:443", name: "c.example", addresses: [address]) else {
            Issue.record("a third host got a client while both carried requests")
            return
        }
        hosts.end(host: "a.example:443", client: a)
        hosts.end(host: "b.example:443", client: b)
        #expect(hosts.clientCount == 2)
        clock.advance(by: 301)
        let c = try #require(Self.admitted(hosts.begin(host: "c.example:443", name: "c.example", addresses: [address])))
        #expect(hosts.clientCount == 1, "both idle clients were evicted")
        hosts.end(host: "c.example:443", client: c)
        await hosts.shutdown()
    }

    @Test func aHostsGateAdmitsItsCapThenAnswersBusy() async throws {
        let hosts = Self.hosts()
        let address = try #require(IPAddressBytes("142.250.185.74"))
        var clients: [HTTPClient] = []
        for _ in 0..<4 {
            clients.append(try #require(Self.admitted(hosts.begin(host: "a.example:443", name: "a.example", addresses: [address]))))
        }
        guard case .hostBusy(limit: 4) = hosts.begin(host: "a.example:443", name: "a.example", addresses: [address]) else {
            Issue.record("a fifth request was admitted")
            return
        }
        for client in clients { hosts.end(host: "a.example:443", client: client) }
        #expect(hosts.gateCount == 0)
        await hosts.shutdown()
    }
}
