import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import Hummingbird

/// What every sender dialect does once it has a ``NotificationDraft``: find the device its credential names (a USER_ID
/// in the path or body for ntfy and Bark, a Herald API token for Gotify and the webhook presets), send through the one
/// ``SendPipeline`` and turn a refused send into an ``APIError`` (the dialect's route renders it in its own shape).
///
/// ```swift
/// let device = try await senders.device(userID: topic, request: request, context: context)
/// let receipt = try await senders.send(draft, to: device)
/// ```
struct SenderDelivery: Sendable {
    let pipeline: SendPipeline
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let tokens: APITokenManager
    let clock: any WallClock
    let bodyLimit: Int
    /// Topic ids as ntfy topics and Bark device keys (issue 42, SenderDelivery+Topics.swift); `nil`: USER_IDs only.
    var topics: TopicDirectory? = nil
    /// Delayed sends (ntfy's `delay`, SenderDelivery+Scheduling.swift); `nil`: refused with a 400.
    var scheduling: SenderScheduling? = nil

    /// The device of a USER_ID given as an ntfy topic or a Bark device key; a failed lookup counts as a failed
    /// credential check (``AuthFailureLimiter``), as at `/api/push/notify`.
    func device(userID: String, field: String, request: Request, context: some RemoteAddressRequestContext) async throws -> Device {
        guard let userID = UserID(userID) else {
            throw APIError.invalidField(field, "\(field) must be a USER_ID (64 hexadecimal characters) of a device registered with Herald.")
        }
        return try await credentials.check(.userID(userID), of: request, context: context) {
            try await directory.device(userID: userID)
        }
    }

    /// The device of a Herald API token (`hrd_…`, the `notifications` scope), given as `token` by the dialect (a header,
    /// `?token=` or `Authorization: Bearer`).
    func device(apiToken token: String?, request: Request, context: some RemoteAddressRequestContext) async throws -> Device {
        let (grant, device) = try await credentials.check(token.map(CredentialFingerprint.apiToken), of: request, context: context) {
            do throws(APITokenError) {
                return try await tokens.authenticate(bearer: token)
            } catch {
                throw APIError(apiToken: error)
            }
        }
        guard grant.grants.allows(.notifications) else {
            throw APIError(.insufficientScope, message: "This API token lacks the notifications scope.")
        }
        return device
    }

    /// Sends `draft` to `device`: the receipt, or the refusal as an ``APIError`` carrying the `RateLimit-*` headers
    /// (a 429 also `Retry-After`).
    func send(_ draft: NotificationDraft, to device: Device) async throws -> SendReceipt {
        var receipt: SendReceipt?
        _ = try await SendAnswers.withRateLimitHeaders(of: device, pipeline: pipeline, clock: clock) {
            do throws(SendError) {
                receipt = try await pipeline.send(draft, to: device)
                return Response(status: .ok)
            } catch {
                throw SendAnswers.apiError(error, now: clock.now())
            }
        }
        guard let receipt else { throw APIError(.internalError) }
        return receipt
    }
}

/// The one rule for a URL a sender gives Herald to show or open (a tap URL, an image, an icon): the rule of
/// `POST /notifications` (``ActionButton/validURL(_:field:)``); images and icons must be http(s).
enum SenderURLRule {
    static func tap(_ raw: String, field: String) throws -> String {
        try ActionButton.validURL(raw, field: field)
    }

    static func image(_ raw: String, field: String) throws -> String {
        let url = try ActionButton.validURL(raw, field: field)
        guard ["http", "https"].contains(ActionButton.scheme(of: url)) else {
            throw APIError.invalidField(field, "\(field) must be an http:// or https:// URL of an image.")
        }
        return url
    }
}

/// Limits every sender dialect applies to the text it is given, before the pipeline fits the body to the provider.
enum SenderTextRule {
    static let maximumTitleLength = 256

    static func title(_ value: String?, field: String) throws -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.count <= maximumTitleLength else {
            throw APIError.invalidField(field, "\(field) must be at most \(maximumTitleLength) characters; got \(value.count).")
        }
        return value
    }

    /// A collapse id (Bark's `id`, a webhook's group key), under the rule of every dialect.
    static func collapseID(_ value: String?, field: String) throws -> String? {
        guard let value, !value.isEmpty else { return nil }
        return try CollapseIDRule.validated(value, field: field)
    }
}
