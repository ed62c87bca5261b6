import Foundation
import HeraldAPNs
import HeraldCore
import HeraldTesting

/// A double for one environment and an `APNsProvider` pointed at it, with hand-driven clocks.
struct APNsHarness {
    static let topic = "com.example.herald"

    let key: TestKey
    let keyPath: String
    let double: APNsDouble
    let provider: APNsProvider
    /// The provider's clock (token `iat` and age).
    let issuerClock: TestClock
    /// The double's clock (token expiry, 20-minute rule, 410 timestamps).
    let doubleClock: TestClock

    /// Starts a double and a provider, runs `body`, and shuts both down whatever happens.
    static func run(
        environment: PushEnvironment = .production,
        sharedClock: Bool = true,
        options: APNsDouble.Options = APNsDouble.Options(),
        configure: (inout APNsConfiguration) -> Void = { _ in },
        _ body: (APNsHarness) async throws -> Void
    ) async throws {
        let key = TestKey()
        let keyPath = try key.writeP8()
        let issuerClock = TestClock()
        let doubleClock = sharedClock ? issuerClock : TestClock()
        let double = try await APNsDouble.start(
            environment: environment, keys: [.init(key)], topics: [topic], clock: doubleClock, options: options)
        var configuration = APNsConfiguration(
            key: .file(path: keyPath), keyID: key.keyID, teamID: key.teamID, topic: topic,
            productionURL: double.baseURL, sandboxURL: double.baseURL, trustedCAPath: double.caPath,
            connectionsPerEnvironment: 1, requestTimeout: .seconds(10))
        configure(&configuration)
        let provider: APNsProvider
        do {
            provider = try APNsProvider(configuration: configuration, clock: issuerClock)
        } catch {
            try await double.shutdown()
            throw error
        }
        let harness = APNsHarness(
            key: key, keyPath: keyPath, double: double, provider: provider, issuerClock: issuerClock,
            doubleClock: doubleClock)
        do {
            try await body(harness)
        } catch {
            await harness.shutdown()
            throw error
        }
        await harness.shutdown()
    }

    func shutdown() async {
        try? await provider.shutdown()
        try? await double.shutdown()
    }

    /// A device in the double's environment.
    func device(_ seed: Int = 1) -> Device {
        Fixtures.device(environment: double.environment, token: Fixtures.apnsToken(seed)).device
    }

    /// An alert for `device`, created at the issuer's time.
    func notification(for device: Device, collapseID: String? = nil, payload: Data? = nil) -> PushNotification {
        var notification = Fixtures.notification(for: device, at: issuerClock.now())
        notification.collapseID = collapseID
        if let payload { notification.payload = payload }
        return notification
    }

    /// Sends one alert to device `seed`.
    func send(_ seed: Int = 1) async -> DeliveryResult {
        let device = device(seed)
        return await provider.send(notification(for: device), to: device)
    }
}

extension DeliveryResult {
    var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }

    var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }
}
