import Foundation
import HeraldCore
import HeraldDelivery
import HeraldProviderKit
import Hummingbird

/// Home Assistant's `mobile_app` push relay: an app sets `push_url` to `<herald>/api/push/homeassistant` and
/// `push_token` to its USER_ID. Every answer is JSON in the shape Home Assistant reads (``ErrorShape/homeAssistant``,
/// chosen for the route group here).
/// An unknown push token counts as a failed credential check (a missing or malformed one, answered 403 before any
/// lookup, does not).
struct HomeAssistantController<Context: RemoteAddressRequestContext>: Sendable {
    let pipeline: SendPipeline
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let clock: any WallClock
    let bodyLimit: Int
    let providers: ProviderProfiles
    /// Keeps each Live Activity token's last `aps.timestamp` (strictly increasing across restarts and instances).
    let activityTimestamps: any ActivityStore

    func addRoutes(to group: RouterGroup<Context>) {
        let homeAssistant = group.group("homeassistant").add(middleware: ErrorShapeMiddleware(.homeAssistant))
        homeAssistant.post(use: send)
        homeAssistant.post("rate_limits", use: rateLimits)
    }

    @Sendable func send(_ request: Request, context: Context) async throws -> Response {
        let notify = try HomeAssistantRequest(try await JSONBody.object(of: request, limit: bodyLimit))
        let device = try await device(for: notify.userID, request, context)
        return try await SendAnswers.withRateLimitHeaders(of: device, pipeline: pipeline, clock: clock) {
            // A WebSocket-only device gets the payload of the provider that renders for it (APNs').
            let rendering = providers.profile(for: device.platform)
            let platform = rendering?.platform ?? device.platform
            let now = clock.now()
            // Checked first with the clock's timestamp: a call that breaks a rule takes nothing from the store. A Live
            // Activity push is written again only when the store gives its token another timestamp (a later one).
            let clockTimestamp = LiveActivityTimestamp.seconds(now)
            var draft = try HomeAssistantPayload.draft(for: notify, platform: platform, now: now, activityTimestamp: clockTimestamp)
            if draft.liveActivityToken != nil {
                let timestamp = try await activityTimestamp(notify, now: now)
                if timestamp != clockTimestamp {
                    draft = try HomeAssistantPayload.draft(for: notify, platform: platform, now: now, activityTimestamp: timestamp)
                }
            }
            do throws(SendError) {
                let receipt = try await pipeline.send(draft, to: device)
                var body = JSONObjectWriter()
                body.add("messageId", .string(receipt.notification.providerMessageID ?? receipt.notification.id.lowercasedText))
                body.add("rateLimits", SendAnswers.rateLimitsObject(receipt.quota))
                body.add("target", .string(notify.pushToken))
                return JSONResponse.make(status: .created, body: body, headers: SendAnswers.headers(receipt.quota, now: clock.now()))
            } catch {
                throw homeAssistantError(error, target: notify.pushToken, provider: rendering?.description.displayName)
            }
        }
    }

    /// The next `aps.timestamp` of the call's Live Activity token, from the store (a call without one takes none);
    /// a store that does not answer is the relay's 503 `InternalError`.
    private func activityTimestamp(_ notify: HomeAssistantRequest, now: Date) async throws -> Int {
        guard let token = notify.liveActivityToken else { return LiveActivityTimestamp.seconds(now) }
        do {
            return try await activityTimestamps.nextLiveActivityTimestamp(token: token, now: now)
        } catch {
            throw homeAssistantError(.storeUnavailable("\(error)"), target: notify.pushToken, provider: nil)
        }
    }

    @Sendable func rateLimits(_ request: Request, context: Context) async throws -> Response {
        let body = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        guard let token = try? body.optionalString("push_token"), let userID = UserID(token) else {
            throw APIError(.missingPushToken, message: "You did not send a valid token!", field: "push_token")
        }
        let device = try await device(for: userID, request, context)
        do {
            let quota = try await pipeline.quota(of: device)
            return JSONResponse.make(
                status: .ok, body: ["target": .string(token), "rateLimits": SendAnswers.rateLimits(quota)],
                headers: SendAnswers.headers(quota, now: clock.now()))
        } catch {
            throw homeAssistantError(error, target: token, provider: providers.profile(for: device.platform)?.description.displayName)
        }
    }

    /// The device of a push token; a store that does not answer the lookup (a device not in the cache) is the relay's
    /// 503 `InternalError` too, not Herald's own shape (a loaded run's frozen-database test found the lookup's 503 bare).
    private func device(for userID: UserID, _ request: Request, _ context: Context) async throws -> Device {
        do {
            return try await credentials.check(.userID(userID), of: request, context: context) {
                do {
                    return try await directory.device(userID: userID)
                } catch let error as APIError where error.code == .unknownUser {
                    throw APIError(.unknownPushToken, field: "push_token")
                }
            }
        } catch var error as APIError where error.code == .storeUnavailable {
            error.extra["errorType"] = .string(ErrorCode.homeAssistantInternalError.rawValue)
            throw error
        }
    }

    /// The relay's error shapes: 429 `RateLimited`, 500 `InvalidToken` / `PayloadTooLarge` / `InternalError`; 503
    /// `InternalError` with `Retry-After` when the store does not answer.
    private func homeAssistantError(_ error: SendError, target: String, provider: String?) -> APIError {
        let now = clock.now()
        switch error {
        case .quotaExceeded(let quota):
            var apiError = SendAnswers.apiError(error, now: now)
            apiError.message = "The given target has reached the maximum number of notifications allowed per day (\(quota.maximum)). Please try again later."
            apiError.extra = ["errorType": "RateLimited", "target": .string(target), "rateLimits": SendAnswers.rateLimits(quota)]
            return apiError
        case .exemptQuotaExceeded(let quota, _), .backlogFull(let quota, _):
            // Answered as the relay answers its limit: Home Assistant logs the message and reads `rateLimits`.
            var apiError = SendAnswers.apiError(error, now: now)
            apiError.extra = ["errorType": "RateLimited", "target": .string(target), "rateLimits": SendAnswers.rateLimits(quota)]
            return apiError
        case .deviceInactive(let reason), .deadTokenDetected(_, let reason, _):
            return Self.internalError(
                .homeAssistantInvalidToken,
                "The device's push token is no longer valid (\(reason)); open the app so that it registers again.")
        case .payloadTooLarge(let minimum, let limit):
            return Self.internalError(
                .homeAssistantPayloadTooLarge,
                "The notification does not fit the push service's \(limit)-byte limit even with the message shortened away (\(minimum) bytes).")
        case .rejectedByProvider(_, let reason, _):
            return Self.internalError(.homeAssistantInternalError, "\(provider ?? "The push service") refused the notification: \(reason).")
        case .storeUnavailable(let cause):
            // 503 with `Retry-After`, as every store failure (the device lookup's too); the relay's `errorType`.
            var apiError = APIError(
                .storeUnavailable, message: "Herald's store is not available; try again shortly.",
                extra: ["errorType": .string(ErrorCode.homeAssistantInternalError.rawValue)], headers: APIError.storeRetryAfter)
            apiError.cause = cause
            return apiError
        case .payloadNotEncodable(let cause):
            var apiError = Self.internalError(.homeAssistantInternalError, "Herald could not write the notification as JSON.")
            apiError.cause = cause
            return apiError
        }
    }

    /// A 500 whose `errorType` is its code.
    private static func internalError(_ type: ErrorCode, _ message: String) -> APIError {
        APIError(type, message: message, extra: ["errorType": .string(type.rawValue)])
    }
}
