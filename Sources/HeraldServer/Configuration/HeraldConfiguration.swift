import Foundation
import Logging

/// Everything `herald serve` can be told. A plain value: tests build it directly,
/// `ConfigurationLoader` builds it from a file and the environment.
public struct HeraldConfiguration: Sendable {
    public var host = "0.0.0.0"
    public var port = 8080
    /// `sqlite:PATH`, a plain path, or `memory:` for a store that lives only as long as the process.
    public var databaseURL = "herald.sqlite"
    /// Notifications per USER_ID per UTC day.
    public var dailyLimit = 150
    public var logLevel: Logger.Level = .info
    /// Request bodies larger than this are refused with 413.
    public var maximumBodyBytes = 65_536
    /// How long an accepted notification is tried before it expires (seconds).
    public var notificationTTL: TimeInterval = 86_400
    /// How long a send request waits for the first delivery attempt before answering "queued".
    public var deliveryWait: Duration = .milliseconds(800)
    /// Deliveries in flight at once.
    public var deliveryConcurrency = 256
    /// APNs; `nil` when no APNs option is set (notifications for Apple devices then stay queued).
    public var apns: APNsSettings?

    public init() {}
}

/// The APNs options as configured (validated and turned into a provider by `buildApplication`).
public struct APNsSettings: Sendable, Equatable {
    public var keyPath: String
    public var keyID: String
    public var teamID: String
    /// The app's bundle id (`apns-topic`).
    public var topic: String
    public var productionURL = "https://api.push.apple.com"
    public var sandboxURL = "https://api.sandbox.push.apple.com"
    /// An extra trusted CA certificate (PEM), for pointing Herald at a local APNs double.
    public var caPath: String?
    /// HTTP/2 connections per APNs environment.
    public var connections = 2
    /// Deadline of one APNs request (seconds).
    public var requestTimeout: TimeInterval = 10

    public init(keyPath: String, keyID: String, teamID: String, topic: String) {
        self.keyPath = keyPath
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
    }
}
