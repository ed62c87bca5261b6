import CoreMetrics
import Foundation
import HeraldCore
import HeraldProviderKit
import Logging
import Synchronization
import Testing

/// The shared attempt loop, driven by a scripted exchange: no double, no sockets.
@Suite("Provider attempt loop")
struct ProviderAttemptsTests {
    /// An exchange that answers from a script and records what the loop asked of it.
    final class ScriptedExchange: ProviderExchange, Sendable {
        enum Outcome: AttemptOutcome, Equatable {
            case ok, refusedCredential, lost, busy
            var answeredStatus: Int? { self == .ok ? 200 : nil }
            var metricReason: String { "\(self)" }
        }

        struct Log: Equatable {
            var sentWith: [Int] = []
            var renewals = 0
            var replaced = 0
        }

        private let script: Mutex<[Outcome?]>
        private let credentials: Mutex<[Int]>
        let log = Mutex(Log())
        let renewalFails: Bool
        let credentialFails: Bool

        init(_ script: [Outcome?], renewalFails: Bool = false, credentialFails: Bool = false) {
            self.script = Mutex(script)
            self.credentials = Mutex([1])
            self.renewalFails = renewalFails
            self.credentialFails = credentialFails
        }

        var logMetadata: Logger.Metadata { [:] }

        func credential() throws(CredentialUnavailable) -> Int {
            if credentialFails { throw CredentialUnavailable(reason: "no credential today") }
            return credentials.withLock { $0.last ?? 0 }
        }

        func renewedCredential(after rejected: Int) throws(CredentialUnavailable) -> Int {
            log.withLock { $0.renewals += 1 }
            if renewalFails { throw CredentialUnavailable(reason: "renewal refused") }
            return credentials.withLock { credentials in
                credentials.append(rejected + 1)
                return rejected + 1
            }
        }

        /// `nil` in the script: the provider is shut down.
        func send(authorizedBy credential: Int) -> (outcome: Outcome, carrier: Int?)? {
            log.withLock { $0.sentWith.append(credential) }
            guard let next = script.withLock({ $0.isEmpty ? Outcome.ok : $0.removeFirst() }) else { return nil }
            return (next, 7)
        }

        func replaceIfSpent(_ carrier: Int?, after outcome: Outcome) -> Bool {
            guard outcome == .lost, carrier == 7 else { return false }
            log.withLock { $0.replaced += 1 }
            return true
        }

        func nextStep(after outcome: Outcome, hasRenewedCredential: Bool, hasResent: Bool) -> AttemptStep {
            switch outcome {
            case .ok: .finish(.delivered(providerMessageID: "m"))
            case .busy: .finish(.retry(reason: "busy", after: .seconds(5)))
            case .refusedCredential:
                hasRenewedCredential ? .finish(.retry(reason: "credential refused", after: nil)) : .renewCredentialAndResend
            case .lost: hasResent ? .finish(.retry(reason: "lost", after: nil)) : .resend
            }
        }
    }

    let attempts = ProviderAttempts(
        description: ProviderDescription(
            name: "scripted", displayName: "Scripted", platform: .apns, credentialName: "credential", notConfiguredNotice: ""),
        logger: Logger(label: "test"), metrics: NOOPMetricsHandler.instance)

    @Test func aRefusedCredentialIsRenewedOnceAndTheRequestResentWithTheNewOne() async {
        let exchange = ScriptedExchange([.refusedCredential, .ok])
        #expect(await attempts.deliver(exchange) == .delivered(providerMessageID: "m"))
        #expect(exchange.log.withLock { $0 } == .init(sentWith: [1, 2], renewals: 1, replaced: 0))
    }

    @Test func aCredentialRefusedAgainAfterItsRenewalIsARetryWithoutASecondRenewal() async {
        let exchange = ScriptedExchange([.refusedCredential, .refusedCredential, .ok])
        #expect(await attempts.deliver(exchange) == .retry(reason: "credential refused", after: nil))
        #expect(exchange.log.withLock { $0 } == .init(sentWith: [1, 2], renewals: 1, replaced: 0))
    }

    @Test func aFailedRenewalIsARetryNamingWhy() async {
        let exchange = ScriptedExchange([.refusedCredential], renewalFails: true)
        #expect(await attempts.deliver(exchange) == .retry(reason: "renewal refused", after: nil))
        #expect(exchange.log.withLock { $0.sentWith } == [1])
    }

    @Test func noCredentialIsARetryWithoutARequest() async {
        let exchange = ScriptedExchange([], credentialFails: true)
        #expect(await attempts.deliver(exchange) == .retry(reason: "no credential today", after: nil))
        #expect(exchange.log.withLock { $0.sentWith }.isEmpty)
    }

    @Test func aLostRequestIsResentOnceOnAReplacedCarrier() async {
        let exchange = ScriptedExchange([.lost, .ok])
        #expect(await attempts.deliver(exchange) == .delivered(providerMessageID: "m"))
        #expect(exchange.log.withLock { $0 } == .init(sentWith: [1, 1], renewals: 0, replaced: 1))
    }

    @Test func aSecondLossIsARetry() async {
        let exchange = ScriptedExchange([.lost, .lost, .ok])
        #expect(await attempts.deliver(exchange) == .retry(reason: "lost", after: nil))
        #expect(exchange.log.withLock { $0 } == .init(sentWith: [1, 1], renewals: 0, replaced: 2))
    }

    @Test func aRenewalAndAResendMayBothHappenOnce() async {
        let exchange = ScriptedExchange([.lost, .refusedCredential, .ok])
        #expect(await attempts.deliver(exchange) == .delivered(providerMessageID: "m"))
        #expect(exchange.log.withLock { $0.sentWith } == [1, 1, 2])
    }

    @Test func theClassificationsVerdictIsReturnedAsItIs() async {
        #expect(await attempts.deliver(ScriptedExchange([.busy])) == .retry(reason: "busy", after: .seconds(5)))
    }

    @Test func aShutDownProviderIsARetryNamingIt() async {
        let exchange = ScriptedExchange([nil])
        #expect(await attempts.deliver(exchange) == .retry(reason: "Scripted provider is shut down", after: nil))
    }

    @Test func metricLabelsKeepTheStatusBounded() {
        struct Answer: AttemptOutcome {
            var answeredStatus: Int?
            var metricReason: String { "because" }
        }
        #expect(Answer(answeredStatus: 429).metricLabels == ("429", "because"))
        #expect(Answer(answeredStatus: 999).metricLabels == ("other", "because"))
        #expect(Answer(answeredStatus: nil).metricLabels == ("none", "because"))
        #expect(Answer(answeredStatus: 503).loggedStatus == "503")
        #expect(Answer(answeredStatus: nil).loggedStatus == "none")
    }
}
