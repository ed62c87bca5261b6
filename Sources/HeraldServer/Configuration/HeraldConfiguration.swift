import Foundation
import HeraldAPNs
import HeraldCore
import HeraldDelivery
import HeraldFCM
import HeraldTransport
import HeraldWebPush
import Logging

/// Everything `herald serve` can be told. A plain value: tests build it directly,
/// `ConfigurationLoader` builds it from a file and the environment.
public struct HeraldConfiguration: Sendable {
    public var host = "0.0.0.0"
    public var port = 8080
    /// `sqlite:PATH`, a plain path, or `memory:` for a store that lives only as long as the process.
    public var databaseURL = "herald.sqlite"
    /// The largest the SQLite file may grow (bytes); `nil` for no limit but the disk's. Beyond it, writes fail as on a
    /// full disk (sends and registrations answer 503, `/readyz` says so).
    public var databaseMaximumBytes: Int?
    /// How long a request waits for the store, at most, per call (a connection from the pool and its statements, or an
    /// accept's group commit); past it the request is answered 503 `store_unavailable` with `Retry-After`
    /// (`HERALD_STORE_TIMEOUT_MS`).
    public var storeTimeout: Duration = .seconds(3)
    /// How long `/readyz` waits for the store's answer; past it, the store is not ready (`/readyz` answers within 1 s).
    /// Not an option of `herald serve`: tests that are not about it lengthen it for a busy machine.
    public var readinessTimeout: Duration = .milliseconds(800)
    /// Notifications per USER_ID per UTC day.
    public var dailyLimit = 150
    /// Notifications exempt from ``dailyLimit`` (critical alerts, commands) per USER_ID per UTC day.
    public var exemptDailyLimit = 50
    /// Notifications one USER_ID may have pending (not yet delivered) at once; beyond it sends answer 429.
    public var maximumPendingPerDevice = 1_000
    /// Finished notifications older than this (seconds since their last change) are deleted (`HERALD_RETENTION`, at
    /// least 60; 30 days by default). Pending notifications are never deleted.
    public var retention: TimeInterval = RetentionPolicy.defaultRetention
    /// Devices not registered, sent to or heard from for this many days are removed with their data
    /// (`HERALD_DEVICE_IDLE_DAYS`); `nil` (the default): never.
    public var deviceIdleDays: Int?
    /// Time between retention passes (not an option: tests shorten it).
    public var retentionInterval: Duration = .seconds(30)
    /// How often due scheduled sends are looked for (not an option: tests shorten it).
    public var scheduledSendPollInterval: Duration = .seconds(1)
    /// How often due repeats of receipts are looked for (not an option: tests shorten it).
    public var receiptPollInterval: Duration = .seconds(1)
    public var logLevel: Logger.Level = .info
    /// `text` (swift-log's standard lines) or `json` (one object per line).
    public var logFormat = LogFormat.text
    /// One info line per request (method, route, status, duration); `X-Request-ID` is answered either way.
    public var accessLog = true
    /// Request bodies larger than this are refused with 413.
    public var maximumBodyBytes = 65_536
    /// How long an accepted notification is tried before it expires (seconds).
    public var notificationTTL: TimeInterval = 86_400
    /// How long a send request waits for the first delivery attempt before answering "queued".
    public var deliveryWait: Duration = .milliseconds(500)
    /// Deliveries in flight at once, at most (64 slots wait for work all the time, the rest start on demand). Against a
    /// provider that answers in 50 ms, 1,024 carry up to about 20,000 deliveries a second.
    public var deliveryConcurrency = 1_024
    /// How long a delivery claim (lease) lasts in the store; renewed every third of it while held. After a crash,
    /// another instance (or the restarted one) takes over the notifications in flight once their leases expire.
    public var leaseDuration: TimeInterval = 30
    /// The longest a delivery outcome that nobody waits for holds back to be committed with the next accept (tuning;
    /// not read from the environment).
    public var outcomeCommitDelay: Duration = GroupCommit.defaultPatience.maximumDelay
    /// This instance's name in the store's leases; `HOSTNAME:PORT` when `nil`. A restarted instance with the same name
    /// takes back the leases its crashed predecessor held at once; instances sharing a database need distinct names.
    public var instanceID: String?
    /// How long a WebSocket client has to confirm a notification before it goes to the cloud provider.
    public var webSocketConfirmTimeout: Duration = .seconds(10)
    /// How often the server pings each WebSocket client; one that has not answered by the next ping is dropped.
    public var webSocketPingInterval: Duration = .seconds(30)
    /// How long a WebSocket may stay open without subscribing; then it is closed (1008), freeing its connection slot.
    public var webSocketSubscribeTimeout: Duration = .seconds(10)
    /// Subscribe messages per minute on one WebSocket, after a burst of 5 (each is a credential check and a store
    /// write); one more is answered `too_many_subscribes`. 0: no limit.
    public var webSocketSubscribesPerMinute = 6
    /// Timeouts, the connection cap and the shutdown bound of client connections.
    public var connectionLimits = ConnectionLimits()
    /// APNs; `nil` when no APNs option is set (notifications for Apple devices then stay queued).
    public var apns: APNsConfiguration?
    /// FCM; `nil` when no FCM option is set (notifications for FCM devices then stay queued).
    public var fcm: FCMConfiguration?
    /// Web Push: the allowed hosts and the key are used for registration and `GET /api/push/webpush/key` whether or not
    /// the provider is configured; the provider is configured once `subject` (`HERALD_VAPID_SUBJECT`) is set.
    public var webPush = WebPushConfiguration()
    /// Signed callbacks: which addresses they may reach, extra CAs, deadlines, the per-host cap (`HERALD_CALLBACK_*`).
    public var callbacks = CallbackConfiguration()
    /// Reverse proxies whose forwarding header is believed (IP addresses or CIDR ranges, e.g. `10.0.0.0/8`, `::1`);
    /// empty: the client address of every request is its socket peer.
    public var trustedProxies: [String] = []
    /// The header a trusted proxy names the client in (its rightmost entry that is not a trusted proxy).
    public var clientAddressHeader = "X-Forwarded-For"
    /// New devices (new USER_IDs) one client address may register per minute (a token bucket); 0 for no limit.
    public var registrationsPerMinute = 20
    /// The most devices the store may hold; a new registration beyond it is refused with 503. `nil`: no limit.
    public var maximumDevices: Int?
    /// When set, a registration that creates a new USER_ID must carry it in `X-Herald-Registration-Token`.
    public var registrationToken: String?
    /// `GET /metrics`, the Prometheus exposition (on by default; off: no metrics are kept at all).
    public var metrics = true
    /// When set, `/metrics` is served by a listener of its own on this port (0: any free port) and `metricsHost`,
    /// and the main port answers 404 for it.
    public var metricsPort: Int?
    /// The address of the separate metrics listener (only with `metricsPort`).
    public var metricsHost = "127.0.0.1"
    /// When set, the operator dashboard is served at `/admin` and this token logs in to it; otherwise `/admin` is 404.
    public var adminToken: String?
    /// `HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE`: the `attributes-type` of the Live Activities Herald starts (PushWard's
    /// activities): the name of the app's `ActivityAttributes` struct.
    public var liveActivityAttributesType = "HeraldActivityAttributes"
    /// `HERALD_ACTIVITY_WRITE_BURST` and `HERALD_ACTIVITY_WRITES_PER_SECOND`: the activity writes one API token may
    /// make at once and keep up (429 `rate_limit.exceeded` past them; docs/activities.md, "Bounds").
    public var activityWriteBurst = 60
    public var activityWritesPerSecond = 10

    public init() {}
}

/// How `herald serve` writes its logs.
public enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json
}
