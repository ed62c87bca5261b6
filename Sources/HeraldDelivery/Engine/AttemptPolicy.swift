import Foundation
import HeraldCore

/// What became of a notification's first delivery attempt, as the send pipeline answers it.
public enum AttemptVerdict: Sendable, Equatable {
    /// A provider (or a WebSocket client) took it.
    case delivered
    /// It will be tried again (transient failure, or a WebSocket client did not confirm in time).
    case willRetry
    /// Nothing can deliver it now; it waits for a client, a re-registration or its expiry.
    case parked
    /// The provider said the device token is dead.
    case deadToken(reason: String)
    /// The device is inactive or gone.
    case deviceUnavailable(reason: String)
    /// The provider refused it for good.
    case refused(reason: String)
    /// Its time to live passed before anything took it.
    case expired
    /// A WebSocket client of its device is connected to another instance, which was asked to deliver it.
    case handedOver(instance: String)
}

/// A notification after a delivery attempt, with the verdict the attempt reached (classified once, by the provider).
public struct AttemptReport: Sendable, Equatable {
    public var notification: PushNotification
    public var verdict: AttemptVerdict
}

/// What a device's local channel (Herald's WebSocket channel) has said so far in one attempt.
public enum LocalAnswer: Sendable, Equatable {
    /// Not asked yet.
    case notAsked
    /// No client took it (none connected, or every one is too far behind).
    case notTaken
    /// A client that does not confirm took it: it counts as delivered.
    case taken
    /// A confirming client has it; its confirmation, or the end of the channel's timer, is awaited.
    case awaitingConfirmation
    /// A client confirmed it in time.
    case confirmed
    /// A client had it and did not confirm in time: the attempt falls back to the provider, under the same lease.
    case unconfirmed
}

/// What one attempt knows when the policy is asked: the device and what the channels answered.
public struct AttemptFacts: Sendable, Equatable {
    /// The notification's device; `nil` when it was removed.
    public var device: Device?
    /// A client of the device is connected to this instance's local channel (after an unconfirmed offer: it was).
    public var isConnectedLocally: Bool
    /// What the local channel said.
    public var local: LocalAnswer
    /// Another instance where a client of the device is connected (asked only when none is connected here).
    public var otherInstance: String?
    /// A provider for the device's platform is configured.
    public var hasProvider: Bool
    /// What the provider answered, once it was asked.
    public var providerResult: DeliveryResult?

    public init(
        device: Device?, isConnectedLocally: Bool = false, local: LocalAnswer = .notAsked, otherInstance: String? = nil,
        hasProvider: Bool = false, providerResult: DeliveryResult? = nil
    ) {
        self.device = device
        self.isConnectedLocally = isConnectedLocally
        self.local = local
        self.otherInstance = otherInstance
        self.hasProvider = hasProvider
        self.providerResult = providerResult
    }
}

/// The end of an attempt: what to save, the verdict, and the channel that made the attempt (a metrics label).
public struct AttemptDecision: Sendable, Equatable {
    public var outcome: DeliveryOutcome
    public var verdict: AttemptVerdict
    /// `apns`, `fcm`, `websocket`, or ``DeliveryMetrics/noProvider`` when no channel was tried.
    public var channel: String
}

/// What an attempt does next.
public enum DeliveryStep: Sendable, Equatable {
    /// Offer the notification to the local channel, then ask again with its answer.
    case offerLocally
    /// Park the attempt outside any delivery slot until the local channel calls back (the lease is kept and renewed);
    /// then ask again with ``LocalAnswer/confirmed`` or ``LocalAnswer/unconfirmed``.
    case awaitConfirmation
    /// Send this notification (its attempt counted) to the device's provider, then ask again with its result.
    case sendToProvider(PushNotification)
    /// The attempt is over.
    case finish(AttemptDecision)
}

/// The delivery policy, without I/O: the channel order (a local connection first, then another instance's, then the
/// device's cloud provider), the verdicts, retries with back-off and expiry. It reads no clock (the attempt passes
/// "now") and touches no store; the attempt runner (``DeliveryAttempt``) asks it after each answer of a channel
/// until it says ``DeliveryStep/finish(_:)``.
///
/// ```swift
/// let policy = AttemptPolicy(retryPolicy: .init(), handOverTimeout: 15, jitter: { 1 })
/// var facts = AttemptFacts(device: device, hasProvider: true)
/// policy.next(for: notification, facts, at: now)  // .sendToProvider(notification, attempts + 1)
/// facts.providerResult = .retry(reason: "429", after: nil)
/// policy.next(for: notification, facts, at: now)  // .finish: willRetry, due at now + 2 s
/// ```
public struct AttemptPolicy: Sendable {
    public var retryPolicy: RetryPolicy
    /// A notification handed to another instance is due here again after this long, in case that instance did not
    /// take it.
    public var handOverTimeout: TimeInterval
    /// The back-off's random factor in [0.5, 1] (``RetryPolicy/delay(afterAttempts:providerMinimum:jitter:)``).
    public var jitter: @Sendable () -> Double

    public init(
        retryPolicy: RetryPolicy, handOverTimeout: TimeInterval,
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0.5...1) }
    ) {
        self.retryPolicy = retryPolicy
        self.handOverTimeout = handOverTimeout
        self.jitter = jitter
    }

    /// The next step of an attempt at `notification` (as it was claimed), given what the attempt learned so far.
    /// `now` is when the attempt began, or when the provider answered once it did.
    public func next(for notification: PushNotification, _ facts: AttemptFacts, at now: Date) -> DeliveryStep {
        if let result = facts.providerResult, let device = facts.device {
            // The provider was asked: its answer decides, whatever the time now.
            var counted = notification
            counted.attempts += 1
            return .finish(apply(result, to: counted, device: device, channel: device.platform.rawValue, at: now))
        }
        switch facts.local {
        case .taken, .confirmed:
            // A client has it, whatever the time now.
            return .finish(Self.deliveredLocally(notification))
        case .awaitingConfirmation:
            return .awaitConfirmation
        case .notAsked, .notTaken, .unconfirmed:
            break
        }
        guard notification.expiresAt > now else {
            var expired = notification
            expired.status = .expired
            expired.lastError = "Expired before it could be delivered"
            return .finish(
                AttemptDecision(outcome: .init(notification: expired, releasesQuota: true), verdict: .expired, channel: noChannel)
            )
        }
        guard let device = facts.device, device.isActive else {
            let reason =
                facts.device.map { "The device must register again: \($0.inactiveReason ?? "it has no push token")" }
                ?? "The device was removed"
            var failed = notification
            failed.status = .failed
            failed.lastError = reason
            return .finish(
                AttemptDecision(
                    outcome: .init(notification: failed, releasesQuota: true), verdict: .deviceUnavailable(reason: reason),
                    channel: noChannel))
        }
        let isConnected = facts.isConnectedLocally || facts.local == .unconfirmed
        if isConnected, facts.local == .notAsked { return .offerLocally }
        if !isConnected, let instance = facts.otherInstance {
            // Still pending, lease given back: that instance claims it (and falls back to the provider itself if its
            // client does not confirm); due here again only if it does not.
            var handedOver = notification
            handedOver.nextAttemptAt = now.addingTimeInterval(handOverTimeout)
            return .finish(
                AttemptDecision(
                    outcome: .init(notification: handedOver), verdict: .handedOver(instance: instance), channel: noChannel))
        }
        let local = isConnected ? Platform.websocket.rawValue : noChannel
        var counted = notification
        counted.attempts += 1
        if facts.hasProvider, device.token != nil { return .sendToProvider(counted) }
        if isConnected {
            // A connected client did not confirm and nothing else can deliver: try it again with back-off.
            return .finish(
                retry(
                    counted, reason: "The WebSocket client did not confirm the notification", after: nil, channel: local, at: now)
            )
        }
        // Parked: due again at its expiry, unless a client connects or the device registers again first.
        var parked = notification
        parked.nextAttemptAt = notification.expiresAt
        return .finish(
            AttemptDecision(outcome: .init(notification: parked, isParked: true), verdict: .parked, channel: noChannel))
    }

    /// A provider's verdict (classified once, by the provider) applied to the notification it was sent.
    func apply(_ result: DeliveryResult, to sent: PushNotification, device: Device, channel: String, at now: Date)
        -> AttemptDecision
    {
        var notification = sent
        switch result {
        case .delivered(let messageID):
            notification.status = .delivered
            notification.providerMessageID = messageID
            notification.lastError = nil
            return AttemptDecision(outcome: .init(notification: notification), verdict: .delivered, channel: channel)
        case .deadToken(let reason):
            notification.status = .failed
            notification.lastError = reason
            // A Live Activity's token ended (or its push-to-start token changed): this push fails, the device stays
            // active.
            let deadToken = notification.liveActivityToken == nil ? device.token : nil
            return AttemptDecision(
                outcome: .init(notification: notification, releasesQuota: true, deadToken: deadToken),
                verdict: .deadToken(reason: reason), channel: channel)
        case .retry(let reason, let minimum):
            return retry(notification, reason: reason, after: minimum, channel: channel, at: now)
        case .failed(let reason):
            notification.status = .failed
            notification.lastError = reason
            return AttemptDecision(
                outcome: .init(notification: notification, releasesQuota: true), verdict: .refused(reason: reason),
                channel: channel)
        }
    }

    /// Due again after the back-off (never earlier than the provider asked), or expired when that is past its expiry.
    func retry(_ original: PushNotification, reason: String, after minimum: Duration?, channel: String, at now: Date)
        -> AttemptDecision
    {
        var notification = original
        let seconds = minimum.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let delay = retryPolicy.delay(afterAttempts: notification.attempts, providerMinimum: seconds, jitter: jitter())
        let next = now.addingTimeInterval(delay)
        notification.lastError = reason
        guard next < notification.expiresAt else {
            notification.status = .expired
            return AttemptDecision(
                outcome: .init(notification: notification, releasesQuota: true), verdict: .expired, channel: channel)
        }
        notification.nextAttemptAt = next
        return AttemptDecision(outcome: .init(notification: notification), verdict: .willRetry, channel: channel)
    }

    static func deliveredLocally(_ original: PushNotification) -> AttemptDecision {
        var notification = original
        notification.attempts += 1
        notification.status = .delivered
        notification.providerMessageID = nil
        notification.lastError = nil
        return AttemptDecision(
            outcome: .init(notification: notification), verdict: .delivered, channel: Platform.websocket.rawValue)
    }

    private var noChannel: String { DeliveryMetrics.noProvider }
}
