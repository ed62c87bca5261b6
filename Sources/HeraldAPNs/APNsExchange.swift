import Foundation
import HeraldCore
import HeraldProviderKit
import Logging
import NIOCore
import NIOHPACK

/// One notification's exchange with APNs, as the shared attempt loop (``ProviderAttempts``) drives it: the provider
/// token is the credential, an ``APNsConnection`` carries each request, ``APNsClassification`` decides.
struct APNsExchange: ProviderExchange {
    let notification: PushNotification
    let deviceToken: String
    let body: ByteBuffer
    let environment: PushEnvironment
    let topic: String
    let pool: APNsConnectionPool
    let tokenIssuer: ProviderTokenIssuer
    let requestTimeout: TimeAmount
    let timeoutDescription: String

    /// The notification's id, as `apns-id` carries it.
    var apnsID: String { notification.id.lowercasedText }

    var logMetadata: Logger.Metadata {
        ["apns-id": "\(apnsID)", "device-token": "\(deviceToken.prefix(8))…"]
    }

    func credential() -> ProviderTokenIssuer.Token {
        tokenIssuer.currentToken()
    }

    /// A token minted before its refresh interval, once per token, after APNs said `ExpiredProviderToken`.
    func renewedCredential(after rejected: ProviderTokenIssuer.Token) throws(CredentialUnavailable) -> ProviderTokenIssuer.Token {
        guard let renewed = tokenIssuer.renewAfterExpiry(of: rejected) else {
            throw CredentialUnavailable(reason: APNsErrorReason.expiredProviderToken.rawValue)
        }
        return renewed
    }

    /// One request on the next connection of the environment; `nil` once shut down. The connection is `nil` when none
    /// could be made.
    func send(authorizedBy token: ProviderTokenIssuer.Token) async -> (outcome: APNsAttemptOutcome, carrier: APNsConnection?)? {
        let headers = makeHeaders(providerToken: token)
        var connection: APNsConnection?
        let outcome: APNsAttemptOutcome
        do {
            guard let leased = try await pool.connection(for: environment) else { return nil }
            connection = leased
            let answer = try await leased.post(
                path: "/3/device/\(deviceToken)", headers: headers, body: body, timeout: requestTimeout)
            outcome = .answered(
                APNsResponse(status: answer.status, apnsID: answer.apnsID, body: Data(answer.body.readableBytesView)))
        } catch {
            outcome = APNsClassification.outcome(of: error)
        }
        return (outcome, connection)
    }

    /// A fresh connection guarantees that a re-send goes out on a new connection, and that
    /// `TooManyProviderTokenUpdates` stops.
    func replaceIfSpent(_ connection: APNsConnection?, after outcome: APNsAttemptOutcome) -> Bool {
        APNsClassification.replacesConnection(after: outcome) && connection?.retire() == true
    }

    func nextStep(after outcome: APNsAttemptOutcome, hasRenewedCredential: Bool, hasResent: Bool) -> AttemptStep {
        APNsClassification.nextStep(
            after: outcome, hasRenewedToken: hasRenewedCredential, hasResent: hasResent, timeout: timeoutDescription)
    }

    /// The request's headers after the pseudo-headers, HPACK-coded as Apple asks: `authorization` and the values
    /// that change with every notification as literals without indexing, the others indexed.
    func makeHeaders(providerToken: ProviderTokenIssuer.Token) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(7)
        headers.add(name: "authorization", value: "bearer \(providerToken.jwt)", indexing: .nonIndexable)
        headers.add(name: "apns-push-type", value: notification.pushType.rawValue)
        headers.add(name: "apns-topic", value: APNsProvider.topic(topic, for: notification.pushType))
        headers.add(name: "apns-priority", value: APNsRenderer.priorityHeader(notification.priority))
        let expiration = max(0, Int(notification.expiresAt.timeIntervalSince1970.rounded(.down)))
        headers.add(name: "apns-expiration", value: String(expiration), indexing: .nonIndexable)
        if let collapseID = notification.collapseID {
            headers.add(name: "apns-collapse-id", value: collapseID, indexing: .nonIndexable)
        }
        headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
        return headers
    }
}
