import HeraldActivities
import HeraldCore
import HeraldDelivery
import HeraldProviderKit
import Logging

/// Everything the HTTP routes need, made once by `buildApplication` and handed to ``buildRouters(_:)`` as one value:
/// the services the controllers call, the surfaces whose routes exist only when they are given, and the settings.
struct RouteDependencies {
    // MARK: Services

    var store: any HeraldStore
    var pipeline: SendPipeline
    /// The delivery engine: a device that registers again has its pending notifications delivered at once.
    var engine: DeliveryEngine
    var hub: WebSocketHub
    /// The other instances on the same PostgreSQL database; `nil` with one instance.
    var link: ClusterLink?

    // MARK: Surfaces (`nil`: their routes are left out)

    /// PushWard's activities (`/activities`).
    var activities: ActivityDispatcher?
    var answerWaiters: AnswerWaiters?
    var approvalWaiters: ApprovalWaiters?
    /// Told of every owner who authenticates (the idle-device rule).
    var retention: RetentionSweeper?
    /// Scheduled sends (`/notifications/scheduled`).
    var scheduled: ScheduledSendDispatcher?
    /// Repeats until acknowledged (`/receipts`).
    var receipts: ReceiptDispatcher?
    /// Signed callbacks: the outbox and the egress policy.
    var callbacks: CallbackSettings?
    var activityWrites: ActivityWriteLimiter?

    // MARK: Settings

    var clock: any WallClock
    /// `HERALD_MAX_BODY_BYTES`.
    var bodyLimit: Int
    var registration: RegistrationSettings
    var providers: ProviderProfiles
    var addresses: ClientAddressResolver
    var metrics: ServerMetrics
    /// `HERALD_ADMIN_TOKEN`; `nil`: no `/admin` at all.
    var adminToken: String?
    var webSocketSession: WebSocketSessionConfiguration
    /// How long `/readyz` waits for the store.
    var readinessTimeout: Duration = .milliseconds(800)
    var logger: Logger
}
