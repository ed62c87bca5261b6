import CoreMetrics
import HeraldCore
import Logging

/// What a provider does after one request, as its classification decides.
public enum AttemptStep: Sendable, Equatable {
    /// The attempt is over, with this verdict.
    case finish(DeliveryResult)
    /// The provider refused the credential (APNs' provider token, FCM's access token): renew it, send again at once.
    case renewCredentialAndResend
    /// The request was lost in a way that is safe to repeat: send it again at once, on another connection.
    case resend
}

/// One request's outcome, as ``ProviderAttempts`` counts and logs it.
public protocol AttemptOutcome: Sendable {
    /// The HTTP status answered; `nil` when no answer came.
    var answeredStatus: Int? { get }
    /// The `reason` label of ``ProviderMetrics``: one of the provider's documented reasons, `unknown` (one added since),
    /// `none` (no reason in the answer), or without an answer `timeout`, `connection_lost` or `error`. Never a token or
    /// an id.
    var metricReason: String { get }
}

extension AttemptOutcome {
    /// The `status` and `reason` labels of ``ProviderMetrics``: the status, `other` outside 100-599, `none` without an
    /// answer.
    public var metricLabels: (status: String, reason: String) {
        let status = answeredStatus.map { (100...599).contains($0) ? String($0) : "other" } ?? "none"
        return (status, metricReason)
    }

    /// The HTTP status for the log; `none` when no answer came.
    public var loggedStatus: String { answeredStatus.map { String($0) } ?? "none" }
}

/// A provider's credential could not be had or renewed; the notification is tried again later.
public struct CredentialUnavailable: Error, Sendable, Equatable {
    /// The retry's reason, e.g. `FCM access token: invalid_grant`.
    public var reason: String

    /// Creates the error.
    public init(reason: String) {
        self.reason = reason
    }
}

/// A provider's side of one notification's delivery: its credential, one request, and the classification of what
/// came back. ``ProviderAttempts/deliver(_:)`` runs the loop around it.
public protocol ProviderExchange: Sendable {
    /// What authorises a request (a provider token, an access token).
    associatedtype Credential: Sendable
    /// What came of one request, before classification.
    associatedtype Outcome: AttemptOutcome
    /// What carried the request (a connection, a client), so that it can be replaced after the outcome.
    associatedtype Carrier: Sendable

    /// Metadata for every log line about this notification (never a full token or secret). Read only when a line is
    /// logged.
    var logMetadata: Logger.Metadata { get }
    /// The credential to send with now.
    func credential() async throws(CredentialUnavailable) -> Credential
    /// A new credential after the provider refused `rejected`.
    func renewedCredential(after rejected: Credential) async throws(CredentialUnavailable) -> Credential
    /// Sends the request once. `nil` when the provider is shut down; the carrier is `nil` when none could be had.
    func send(authorizedBy credential: Credential) async -> (outcome: Outcome, carrier: Carrier?)?
    /// Replaces the carrier when `outcome` says it is spent (lost, or refusing more); `true` when it was replaced.
    func replaceIfSpent(_ carrier: Carrier?, after outcome: Outcome) async -> Bool
    /// The classification: what to do after `outcome`, given what this delivery already tried.
    func nextStep(after outcome: Outcome, hasRenewedCredential: Bool, hasResent: Bool) -> AttemptStep
}

/// The attempt loop every provider shares: send → classify → renew the credential and resend once after it was
/// refused, or resend once after a loss the provider calls safe to repeat → a ``DeliveryResult``, with one metric
/// per request and one log line per decision.
///
/// ```swift
/// let attempts = ProviderAttempts(description: APNsModule.description, services: services)
/// return await attempts.deliver(APNsExchange(…))
/// ```
public struct ProviderAttempts: Sendable {
    /// The provider, as logs name it.
    public let description: ProviderDescription
    @usableFromInline let logger: Logger
    @usableFromInline let metrics: ProviderMetrics

    /// Creates the loop of one provider; its metrics carry `provider` = `description.name`.
    public init(description: ProviderDescription, logger: Logger, metrics: any MetricsFactory) {
        self.description = description
        self.logger = logger
        self.metrics = ProviderMetrics(provider: description.name, factory: metrics)
    }

    /// Delivers one notification through `exchange`: at most one credential renewal and one resend.
    @inlinable
    public func deliver<Exchange: ProviderExchange>(_ exchange: Exchange) async -> DeliveryResult {
        var credential: Exchange.Credential
        do {
            credential = try await exchange.credential()
        } catch {
            return unavailable(error, exchange.logMetadata)
        }
        var hasRenewedCredential = false
        var hasResent = false
        while true {
            let started = ContinuousClock.now
            guard let (outcome, carrier) = await exchange.send(authorizedBy: credential) else {
                return .retry(reason: "\(description.displayName) provider is shut down", after: nil)
            }
            metrics.record(outcome.metricLabels, duration: ContinuousClock.now - started)
            if await exchange.replaceIfSpent(carrier, after: outcome) {
                logger.info("\(description.displayName): replacing a connection", metadata: exchange.logMetadata)
            }
            switch exchange.nextStep(after: outcome, hasRenewedCredential: hasRenewedCredential, hasResent: hasResent) {
            case .renewCredentialAndResend:
                logger.warning(
                    "\(description.displayName): \(description.credentialName) refused, renewing it and re-sending",
                    metadata: exchange.logMetadata)
                hasRenewedCredential = true
                do {
                    credential = try await exchange.renewedCredential(after: credential)
                } catch {
                    return unavailable(error, exchange.logMetadata)
                }
            case .resend:
                logger.info(
                    "\(description.displayName): the connection was lost before the answer, re-sending once",
                    metadata: exchange.logMetadata)
                hasResent = true
            case .finish(let result):
                log(result, status: outcome.loggedStatus, metadata: exchange.logMetadata)
                return result
            }
        }
    }

    @usableFromInline
    func unavailable(_ error: CredentialUnavailable, _ metadata: @autoclosure () -> Logger.Metadata) -> DeliveryResult {
        logger.error(
            "\(description.displayName): no \(description.credentialName)",
            metadata: metadata().merging(["error": "\(error.reason)"]) { _, new in new })
        return .retry(reason: error.reason, after: nil)
    }

    /// Logs a verdict: delivered at debug, a dead token at info, a retry at warning, a refusal at error.
    @usableFromInline
    func log(_ result: DeliveryResult, status: String, metadata: @autoclosure () -> Logger.Metadata) {
        let name = description.displayName
        func more(_ reason: String) -> Logger.Metadata {
            metadata().merging(["status": "\(status)", "reason": "\(reason)"]) { _, new in new }
        }
        switch result {
        case .delivered:
            logger.debug("\(name): delivered", metadata: metadata())
        case .deadToken(let reason):
            logger.info("\(name): dead device token", metadata: more(reason))
        case .retry(let reason, _):
            logger.warning("\(name): will retry", metadata: more(reason))
        case .failed(let reason):
            logger.error("\(name): refused", metadata: more(reason))
        }
    }

    /// Logs a verdict reached before any request (a notification that cannot be sent as it is).
    public func logRefusedBeforeSending(_ result: DeliveryResult, metadata: @autoclosure () -> Logger.Metadata) {
        log(result, status: "none", metadata: metadata())
    }
}
