import Foundation
import HeraldCore
import Testing

/// What the far end of a provider saw of one send request.
struct ContractRequest: Sendable, Equatable {
    /// The credential the request carried (a provider token, an access token).
    var credential: String?
    /// The status answered; `nil` when none was (a dropped connection).
    var status: Int?
    /// Which connection carried it.
    var connection: Int
}

/// How one provider's far end (its double, or a stub) is made to answer each case of the contract. A new provider
/// passes the contract by adding an adapter and a case to ``ContractSubject``.
protocol ContractAdapter: Sendable {
    /// Sends one notification to the adapter's device.
    func send() async -> DeliveryResult
    /// The device's token is dead from now on.
    func killToken()
    /// The next request is refused for now, with a delay the provider must pass on; returns that delay.
    func refuseNextForAWhile() -> Duration
    /// The next request is refused for good.
    func refuseNextForGood()
    /// The credential the provider last used is refused from now on (expired, revoked).
    func refuseCurrentCredential()
    /// Whether the provider renews a refused credential (APNs' provider token, FCM's access token); a Web Push VAPID
    /// token refused is a key the subscription was not made with, which renewing does not cure.
    var renewsRefusedCredential: Bool { get }
    /// The next `count` requests lose their connection before the answer.
    func loseConnections(_ count: Int)
    /// Whether the provider's rules call a lost answer safe to send again at once (APNs: yes; FCM: no, FCM may have
    /// taken the message).
    var resendsAfterLostConnection: Bool { get }
    /// The send requests the far end saw, in order.
    func requests() -> [ContractRequest]
    /// Stops the provider and its far end.
    func shutdown() async
}

/// Every provider that runs the contract.
enum ContractSubject: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case apns, fcm, webpush, stub

    func start() async throws -> any ContractAdapter {
        switch self {
        case .apns: try await APNsContractAdapter.start()
        case .fcm: try await FCMContractAdapter.start()
        case .webpush: try await WebPushContractAdapter.start()
        case .stub: StubContractAdapter()
        }
    }

    var testDescription: String { rawValue }
}

/// The same cases for every provider: dead token, retry-after, credential renewal, resend once, permanent failure.
@Suite("Provider contract")
struct ProviderContractTests {
    private func run(_ subject: ContractSubject, _ body: (any ContractAdapter) async throws -> Void) async throws {
        let adapter = try await subject.start()
        do {
            try await body(adapter)
        } catch {
            await adapter.shutdown()
            throw error
        }
        await adapter.shutdown()
    }

    @Test(arguments: ContractSubject.allCases)
    func aDeliveryIsOneRequestAndNamesTheProvidersMessage(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            let result = await adapter.send()
            guard case .delivered(let id?) = result else {
                Issue.record("expected a delivery with the provider's id, got \(result)")
                return
            }
            #expect(!id.isEmpty)
            #expect(adapter.requests().map(\.isSuccess) == [true])
        }
    }

    @Test(arguments: ContractSubject.allCases)
    func aDeadTokenIsReportedAfterOneRequest(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            adapter.killToken()
            let result = await adapter.send()
            guard case .deadToken = result else {
                Issue.record("expected a dead token, got \(result)")
                return
            }
            #expect(adapter.requests().count == 1)
        }
    }

    @Test(arguments: ContractSubject.allCases)
    func aRefusalForNowIsARetryNoEarlierThanTheProviderSays(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            let delay = adapter.refuseNextForAWhile()
            let result = await adapter.send()
            guard case .retry(_, let after) = result else {
                Issue.record("expected a retry, got \(result)")
                return
            }
            #expect(after == delay)
            #expect(adapter.requests().count == 1)
            #expect(await adapter.send().isDelivered)
        }
    }

    @Test(arguments: ContractSubject.allCases)
    func aRefusalForGoodFailsWithoutAResend(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            adapter.refuseNextForGood()
            let result = await adapter.send()
            guard case .failed(let reason) = result else {
                Issue.record("expected a permanent failure, got \(result)")
                return
            }
            #expect(!reason.isEmpty)
            #expect(adapter.requests().count == 1)
            #expect(await adapter.send().isDelivered)
        }
    }

    @Test(arguments: ContractSubject.allCases)
    func aRefusedCredentialIsRenewedOnceAndTheNotificationResent(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            try #require(await adapter.send().isDelivered)
            adapter.refuseCurrentCredential()
            let result = await adapter.send()
            guard adapter.renewsRefusedCredential else {
                #expect(result.isFailed, "\(result)")
                #expect(adapter.requests().count == 2)
                return
            }
            #expect(result.isDelivered, "\(result)")
            let requests = adapter.requests()
            try #require(requests.count == 3, "\(requests)")
            #expect(!requests[1].isSuccess)
            #expect(requests[1].credential == requests[0].credential)
            #expect(requests[2].isSuccess)
            #expect(requests[2].credential != requests[1].credential)
        }
    }

    @Test(arguments: ContractSubject.allCases)
    func aLostConnectionIsResentAtMostOnceAndTheNextSendUsesANewOne(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            try #require(await adapter.send().isDelivered)  // the connection exists before the fault
            adapter.loseConnections(1)
            let result = await adapter.send()
            let lost = adapter.requests()[1]
            #expect(lost.status == nil)
            if adapter.resendsAfterLostConnection {
                #expect(result.isDelivered, "\(result)")
                let requests = adapter.requests()
                try #require(requests.count == 3, "\(requests)")
                #expect(requests[2].connection != lost.connection)
            } else {
                #expect(result.isRetry, "\(result)")
                #expect(adapter.requests().count == 2)
                #expect(await adapter.send().isDelivered)
                #expect(adapter.requests().last?.connection != lost.connection)
            }
        }
    }

    @Test(arguments: ContractSubject.allCases)
    func aSecondLostConnectionIsARetry(_ subject: ContractSubject) async throws {
        try await run(subject) { adapter in
            adapter.loseConnections(2)
            let result = await adapter.send()
            #expect(result.isRetry, "\(result)")
            #expect(adapter.requests().count == (adapter.resendsAfterLostConnection ? 2 : 1))
        }
    }
}

extension DeliveryResult {
    var isDelivered: Bool { if case .delivered = self { true } else { false } }
    var isRetry: Bool { if case .retry = self { true } else { false } }
    var isFailed: Bool { if case .failed = self { true } else { false } }
}

extension ContractRequest {
    /// Answered with a 2xx (APNs and FCM answer 200, push services 201).
    var isSuccess: Bool { status.map { (200...299).contains($0) } ?? false }
}

extension ContractAdapter {
    var renewsRefusedCredential: Bool { true }
}
