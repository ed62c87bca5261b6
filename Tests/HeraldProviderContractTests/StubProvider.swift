import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldTesting
import Logging
import Synchronization

/// A third provider, to prove that one plugs into the kit: it speaks to ``StubPushService`` (in memory, no sockets),
/// and brings only what a real provider must — its exchange (credential, one request, classification), its module,
/// and the one line that would list it in the composition root (``ProviderEntryTests``).
final class StubProvider: ClosablePushProvider {
    let platform: Platform = .websocket
    let service: StubPushService
    private let attempts: ProviderAttempts

    init(service: StubPushService, services: ProviderServices) {
        self.service = service
        self.attempts = ProviderAttempts(description: StubModule.description, logger: services.logger, metrics: services.metrics)
    }

    func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        guard let token = device.token else { return .failed(reason: "no token") }
        guard let payload = try? StubModule.renderer.payload(of: notification) else { return .failed(reason: "too large") }
        return await attempts.deliver(StubExchange(service: service, token: token, payload: payload))
    }

    func shutdown() async throws {
        service.shutDown()
    }
}

/// The stub's rules: 200 delivered; 404 dead; 429 and 503 retry after `Retry-After`; 401 renew the credential once;
/// a lost connection resent once; other 4xx failed.
struct StubExchange: ProviderExchange {
    let service: StubPushService
    let token: String
    let payload: Data

    var logMetadata: Logger.Metadata { ["stub-token": "\(token.prefix(4))…"] }

    func credential() -> String { service.currentCredential() }

    func renewedCredential(after rejected: String) -> String { service.renewCredential() }

    func send(authorizedBy credential: String) async -> (outcome: StubOutcome, carrier: Int?)? {
        guard let (outcome, connection) = service.post(token: token, credential: credential, payload: payload) else { return nil }
        return (outcome, connection)
    }

    func replaceIfSpent(_ connection: Int?, after outcome: StubOutcome) -> Bool {
        guard case .connectionLost = outcome, let connection else { return false }
        service.replace(connection)
        return true
    }

    func nextStep(after outcome: StubOutcome, hasRenewedCredential: Bool, hasResent: Bool) -> AttemptStep {
        switch outcome {
        case .connectionLost:
            return hasResent ? .finish(.retry(reason: "connection lost", after: nil)) : .resend
        case .answered(let status, let retryAfter, let id):
            switch status {
            case 200: return .finish(.delivered(providerMessageID: id))
            case 401: return hasRenewedCredential ? .finish(.retry(reason: "unauthorised", after: nil)) : .renewCredentialAndResend
            case 404: return .finish(.deadToken(reason: "gone"))
            case 429, 503: return .finish(.retry(reason: "busy", after: retryAfter.map { .seconds($0) }))
            default: return .finish(.failed(reason: "HTTP \(status)"))
            }
        }
    }
}

/// What came of one stub request.
enum StubOutcome: AttemptOutcome, Equatable {
    case answered(status: Int, retryAfter: Int?, id: String?)
    case connectionLost

    var answeredStatus: Int? { if case .answered(let status, _, _) = self { status } else { nil } }
    var metricReason: String { self == .connectionLost ? "connection_lost" : "none" }
}

/// The stub's far end, in memory: credentials, dead tokens, scripted faults, connections, and a log of requests.
final class StubPushService: Sendable {
    enum Fault {
        case answer(status: Int, retryAfter: Int?)
        case dropConnection
    }

    private struct State {
        var credentialSerial = 1
        var refusedCredentials: Set<String> = []
        var deadTokens: Set<String> = []
        var faults: [Fault] = []
        var connection = 1
        var requests: [ContractRequest] = []
        var payloads: [Data] = []
        var isShutDown = false
    }

    private let state = Mutex(State())

    func currentCredential() -> String { state.withLock { "credential-\($0.credentialSerial)" } }

    func renewCredential() -> String {
        state.withLock { state in
            state.credentialSerial += 1
            return "credential-\(state.credentialSerial)"
        }
    }

    func refuse(_ credential: String) { state.withLock { _ = $0.refusedCredentials.insert(credential) } }
    func kill(_ token: String) { state.withLock { _ = $0.deadTokens.insert(token) } }
    func inject(_ fault: Fault, count: Int = 1) { state.withLock { $0.faults += Array(repeating: fault, count: count) } }
    func replace(_ connection: Int) { state.withLock { if $0.connection == connection { $0.connection += 1 } } }
    func shutDown() { state.withLock { $0.isShutDown = true } }
    var requests: [ContractRequest] { state.withLock { $0.requests } }
    /// The payload of every request, in order.
    var payloads: [Data] { state.withLock { $0.payloads } }

    /// One request: `nil` once shut down.
    func post(token: String, credential: String, payload: Data) -> (StubOutcome, Int)? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            let connection = state.connection
            let outcome: StubOutcome
            if state.refusedCredentials.contains(credential) {
                outcome = .answered(status: 401, retryAfter: nil, id: nil)
            } else if let fault = state.faults.first {
                state.faults.removeFirst()
                switch fault {
                case .answer(let status, let retryAfter): outcome = .answered(status: status, retryAfter: retryAfter, id: nil)
                case .dropConnection: outcome = .connectionLost
                }
            } else if state.deadTokens.contains(token) {
                outcome = .answered(status: 404, retryAfter: nil, id: nil)
            } else {
                outcome = .answered(status: 200, retryAfter: nil, id: "stub-\(state.requests.count + 1)")
            }
            let status: Int? = if case .answered(let status, _, _) = outcome { status } else { nil }
            state.requests.append(ContractRequest(credential: credential, status: status, connection: connection))
            state.payloads.append(payload)
            return (outcome, connection)
        }
    }
}

/// The stub provider's module: what the composition root and the CLI need.
enum StubModule: ProviderModule {
    struct Configuration: Sendable {
        var service: StubPushService
    }

    static let description = ProviderDescription(
        name: "stub", displayName: "Stub", platform: .websocket, credentialName: "stub credential",
        notConfiguredNotice: "Stub is not configured", limits: ProviderLimits(maximumTimeToLive: 60))
    static let checkCommand = ProviderCheck(abstract: "Validate the stub's configuration.", notConfigured: "Stub is not configured.")
    static let renderer: any PayloadRenderer = StubRenderer()

    static func makeProvider(_ configuration: Configuration, services: ProviderServices) throws -> StubProvider {
        StubProvider(service: configuration.service, services: services)
    }

    static func check(_ configuration: Configuration) throws -> [String] {
        ["credential: \(configuration.service.currentCredential())"]
    }
}

/// The contract over the stub provider.
struct StubContractAdapter: ContractAdapter {
    static let token = "stub-device-1"
    let service = StubPushService()
    let provider: StubProvider

    init() {
        provider = StubProvider(service: service, services: ProviderServices(logger: Logger(label: "stub")))
    }

    func send() async -> DeliveryResult {
        let device = Fixtures.device(platform: .apns, token: Self.token).device
        return await provider.send(Fixtures.notification(for: device), to: device)
    }

    func killToken() { service.kill(Self.token) }

    func refuseNextForAWhile() -> Duration {
        service.inject(.answer(status: 503, retryAfter: 30))
        return .seconds(30)
    }

    func refuseNextForGood() { service.inject(.answer(status: 400, retryAfter: nil)) }
    func refuseCurrentCredential() { service.refuse(service.currentCredential()) }
    func loseConnections(_ count: Int) { service.inject(.dropConnection, count: count) }
    var resendsAfterLostConnection: Bool { true }
    func requests() -> [ContractRequest] { service.requests }
    func shutdown() async { try? await provider.shutdown() }
}

/// The stub's payload: the title and body as one line of text, at most 256 bytes.
struct StubRenderer: PayloadRenderer {
    let name = "stub"
    let sizeLimit = 256
    func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        RenderedPayload(
            payload: ["text": .string([content.title, content.body].compactMap(\.self).joined(separator: ": "))], bodyPath: ["text"],
            priority: priority)
    }
}
