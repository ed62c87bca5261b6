import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldProviderKit
import Logging
import NIOCore
import NIOHTTP1

/// One notification's exchange with FCM, as the shared attempt loop (``ProviderAttempts``) drives it: the OAuth access
/// token is the credential, a client of the ``FCMClientPool`` carries each request, ``FCMClassification`` decides.
struct FCMExchange: ProviderExchange {
    let notificationID: UUID
    let registrationToken: String
    let body: ByteBuffer
    let sendURL: String
    let clients: FCMClientPool
    let accessTokens: FCMAccessTokens
    let requestTimeout: TimeAmount
    let timeoutDescription: String
    let logger: Logger

    var logMetadata: Logger.Metadata {
        ["notification": "\(notificationID)", "device-token": "\(registrationToken.prefix(8))…"]
    }

    func credential() async throws(CredentialUnavailable) -> FCMAccessTokens.Token {
        do {
            return try await accessTokens.current()
        } catch {
            throw CredentialUnavailable(reason: "FCM access token: \(error.description)")
        }
    }

    /// Renews the token FCM answered `401` to (once; another request may already have renewed it).
    func renewedCredential(after rejected: FCMAccessTokens.Token) async throws(CredentialUnavailable) -> FCMAccessTokens.Token {
        do {
            return try await accessTokens.renew(after: rejected)
        } catch {
            throw CredentialUnavailable(reason: "FCM access token: \(error.description)")
        }
    }

    /// `POST messages:send` on the next client; `nil` once shut down.
    func send(
        authorizedBy accessToken: FCMAccessTokens.Token
    ) async -> (outcome: FCMAttemptOutcome, carrier: FCMClientPool.Lease?)? {
        var request = HTTPClientRequest(url: sendURL)
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer \(accessToken.value)")
        request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        request.body = .bytes(body)
        guard let lease = clients.lease() else { return nil }
        do {
            let response = try await lease.client.execute(request, timeout: requestTimeout, logger: logger)
            let answer = try await response.body.collect(upTo: 64 * 1024)
            let outcome = FCMAttemptOutcome.answered(
                FCMResponse(
                    status: Int(response.status.code), body: Data(answer.readableBytesView),
                    retryAfterHeader: response.headers.first(name: "retry-after")))
            return (outcome, lease)
        } catch {
            return (FCMClassification.outcome(of: error), lease)
        }
    }

    /// A client whose connection is gone is replaced (see ``FCMClientPool``).
    func replaceIfSpent(_ lease: FCMClientPool.Lease?, after outcome: FCMAttemptOutcome) async -> Bool {
        guard let lease, FCMClassification.replacesConnection(after: outcome) else { return false }
        await clients.replace(lease)
        return true
    }

    func nextStep(after outcome: FCMAttemptOutcome, hasRenewedCredential: Bool, hasResent: Bool) -> AttemptStep {
        FCMClassification.nextStep(
            after: outcome, hasRenewedToken: hasRenewedCredential, hasResent: hasResent, timeout: timeoutDescription)
    }
}

extension FCMAttemptOutcome: AttemptOutcome {
    var answeredStatus: Int? {
        if case .answered(let response) = self { response.status } else { nil }
    }

    /// One of Google's documented `errorCode`s, `unknown` or `none`; without an answer `timeout`, `connection_lost` or
    /// `error`.
    var metricReason: String {
        switch self {
        case .answered(let response): response.errorCode.map { FCMMessageRules.errorCodes.contains($0) ? $0 : "unknown" } ?? "none"
        case .timedOut: "timeout"
        case .notSent, .connectionLost: "connection_lost"
        case .failed: "error"
        }
    }
}
