import Foundation
import HeraldAPNs
import HeraldCore
import HeraldTesting

/// The contract over the APNs provider and the APNs double (HTTP/2, TLS, ES256 provider tokens).
struct APNsContractAdapter: ContractAdapter {
    static let topic = "com.example.herald"

    let double: APNsDouble
    let provider: APNsProvider
    /// The provider's clock (token `iat` and age).
    let issuerClock: TestClock
    /// The double's clock: ahead of the issuer's, it sees the provider's token as expired.
    let doubleClock: TestClock

    static func start() async throws -> APNsContractAdapter {
        let key = TestKey()
        let issuerClock = TestClock()
        let doubleClock = TestClock()
        let double = try await APNsDouble.start(keys: [.init(key)], topics: [topic], clock: doubleClock)
        let configuration = APNsConfiguration(
            key: .file(path: try key.writeP8()), keyID: key.keyID, teamID: key.teamID, topic: topic,
            productionURL: double.baseURL, sandboxURL: double.baseURL, trustedCAPath: double.caPath,
            connectionsPerEnvironment: 1)
        do {
            let provider = try APNsProvider(configuration: configuration, clock: issuerClock)
            return APNsContractAdapter(double: double, provider: provider, issuerClock: issuerClock, doubleClock: doubleClock)
        } catch {
            try? await double.shutdown()
            throw error
        }
    }

    func send() async -> DeliveryResult {
        let device = Fixtures.device(environment: .production, token: Fixtures.apnsToken(1)).device
        return await provider.send(Fixtures.notification(for: device, at: issuerClock.now()), to: device)
    }

    func killToken() {
        double.markUnregistered(Fixtures.apnsToken(1))
    }

    /// `429 TooManyRequests`: Apple sends no Retry-After; Herald waits its documented minute.
    func refuseNextForAWhile() -> Duration {
        double.failNext(status: 429, reason: "TooManyRequests")
        return .seconds(60)
    }

    func refuseNextForGood() {
        double.failNext(status: 400, reason: "BadExpirationDate")
    }

    /// The double's clock runs an hour ahead: the cached token is `ExpiredProviderToken`; the issuer's clock moves past
    /// Apple's 20 minutes, so the renewed one is younger.
    func refuseCurrentCredential() {
        issuerClock.advance(by: 21 * 60)
        doubleClock.advance(by: 61 * 60)
    }

    func loseConnections(_ count: Int) {
        double.inject(.dropConnection, count: count)
    }

    var resendsAfterLostConnection: Bool { true }

    func requests() -> [ContractRequest] {
        double.requests.map { ContractRequest(credential: $0.providerToken?.jwt, status: $0.status, connection: $0.connectionID) }
    }

    func shutdown() async {
        try? await provider.shutdown()
        try? await double.shutdown()
    }
}
