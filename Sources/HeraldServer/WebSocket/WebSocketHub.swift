import CoreMetrics
import DequeModule
import Foundation
import HeraldCore
import Logging
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// The WebSocket channel's switchboard: which clients of which device are subscribed and the confirmations the
/// delivery engine waits for. It is the engine's ``LocalChannel``.
public final class WebSocketHub: LocalChannel, Service {
    /// Events a subscriber's socket has not written yet; past this, new events are not queued for it (a slow client
    /// can't make Herald's memory grow) and the notification falls back to the cloud provider or stays pending.
    /// The socket counts them (``SubscribedSocket/offer(event:limit:)``).
    public static let sendQueueLimit = 64

    /// One subscribed socket.
    struct Subscriber: Sendable {
        let id: UUID
        let deviceID: Device.ID
        /// The `id` of the subscribe message; events carry it, as in Home Assistant's protocol.
        let subscriptionMessageID: Int
        let supportsConfirm: Bool
        let socket: any SubscribedSocket
    }

    /// A notification a confirming client has, waiting for its confirmation.
    private struct AwaitedConfirmation {
        var deviceID: Device.ID
        var confirmed: @Sendable (Bool) -> Void
    }

    private struct State {
        var subscribers: [Device.ID: [UUID: Subscriber]] = [:]
        /// Confirmation id → the device it was sent to and who is told the outcome.
        var awaitingConfirmation: [String: AwaitedConfirmation] = [:]
        /// Every confirmation's deadline, in the order they were offered (one timeout for all: also deadline order).
        var deadlines: Deque<(at: ContinuousClock.Instant, confirmID: String)> = []
        /// Whether the task that expires unanswered confirmations runs (it ends when nothing is awaited).
        var isExpiring = false
        var isShuttingDown = false
    }

    private let state = Mutex(State())
    private let confirmTimeout: Duration
    private let logger: Logger
    private let confirmations: WebSocketConfirmationMetrics
    private let renderers: PayloadRenderers

    public init(
        confirmTimeout: Duration, renderers: PayloadRenderers, metrics: any MetricsFactory = MetricsSystem.factory, logger: Logger
    ) {
        self.renderers = renderers
        self.confirmTimeout = confirmTimeout
        self.logger = logger
        self.confirmations = WebSocketConfirmationMetrics(factory: metrics)
    }

    // MARK: Subscriptions

    /// Registers a socket for a device: its events are offered to `socket`. Returns the subscription's id, or
    /// `nil` when Herald is shutting down.
    func subscribe(deviceID: Device.ID, messageID: Int, supportsConfirm: Bool, socket: any SubscribedSocket) -> UUID? {
        let subscriber = Subscriber(
            id: .random(), deviceID: deviceID, subscriptionMessageID: messageID, supportsConfirm: supportsConfirm, socket: socket)
        let accepted = state.withLock { state in
            guard !state.isShuttingDown else { return false }
            state.subscribers[deviceID, default: [:]][subscriber.id] = subscriber
            return true
        }
        guard accepted else { return nil }
        return subscriber.id
    }

    /// Removes a socket's subscription (it closed, or subscribed again).
    func unsubscribe(_ id: UUID, deviceID: Device.ID) {
        state.withLock { state in
            state.subscribers[deviceID]?.removeValue(forKey: id)
            if state.subscribers[deviceID]?.isEmpty == true { state.subscribers[deviceID] = nil }
        }
    }

    /// A client confirms a notification; false when no delivery waits for this id from this device.
    func confirm(_ confirmID: String, deviceID: Device.ID) -> Bool {
        let awaited = state.withLock { state -> AwaitedConfirmation? in
            guard let entry = state.awaitingConfirmation[confirmID], entry.deviceID == deviceID else { return nil }
            state.awaitingConfirmation[confirmID] = nil
            return entry
        }
        guard let awaited else { return false }
        awaited.confirmed(true)
        confirmations.record(confirmed: true)
        return true
    }

    /// How many sockets are subscribed (for tests and benchmarks).
    public var subscriberCount: Int { state.withLock { $0.subscribers.values.reduce(0) { $0 + $1.count } } }

    // MARK: LocalChannel

    public func isConnected(_ deviceID: Device.ID) -> Bool {
        state.withLock { $0.subscribers[deviceID]?.isEmpty == false }
    }

    public func offer(
        _ notification: PushNotification, to device: Device, confirmed: @escaping @Sendable (Bool) -> Void
    ) -> LocalOffer {
        let subscribers = state.withLock { Array(($0.subscribers[device.id] ?? [:]).values) }
        guard !subscribers.isEmpty, let body = eventBody(for: notification, platform: device.platform) else { return .notTaken }
        let confirmID = UUID.random().lowercasedText.replacingOccurrences(of: "-", with: "")
        let confirming = subscribers.filter(\.supportsConfirm)
        if !confirming.isEmpty {
            // Registered before any client can see the event, so that a quick confirmation finds it.
            let startsExpiring = state.withLock { state -> Bool in
                state.awaitingConfirmation[confirmID] = AwaitedConfirmation(deviceID: device.id, confirmed: confirmed)
                state.deadlines.append((ContinuousClock.now.advanced(by: confirmTimeout), confirmID))
                defer { state.isExpiring = true }
                return !state.isExpiring
            }
            if startsExpiring { Task { await self.expireConfirmations() } }
        }
        var handedToNonConfirming = false
        var queuedForConfirming = false
        for subscriber in subscribers {
            let event = Self.event(body, subscriber: subscriber, confirmID: confirmID)
            if subscriber.socket.offer(event: event, limit: Self.sendQueueLimit) {
                if subscriber.supportsConfirm { queuedForConfirming = true } else { handedToNonConfirming = true }
            }
        }
        if confirming.isEmpty { return handedToNonConfirming ? .delivered : .notTaken }
        if handedToNonConfirming || !queuedForConfirming {
            // Nothing to wait for: delivered if a client that does not confirm took it. Unless a confirmation came in
            // meanwhile and already answered.
            let stillAwaited = state.withLock { $0.awaitingConfirmation.removeValue(forKey: confirmID) != nil }
            guard stillAwaited else { return .awaitingConfirmation }
            return handedToNonConfirming ? .delivered : .notTaken
        }
        return .awaitingConfirmation
    }

    /// Answers `false` for every confirmation whose time is up, until none is awaited: one task for all of them
    /// (started by the first offer that waits), checking a few times per timeout.
    private func expireConfirmations() async {
        let interval = min(confirmTimeout / 4, .milliseconds(100))
        while true {
            try? await Task.sleep(for: interval)
            let now = ContinuousClock.now
            let (expired, done) = state.withLock { state -> ([AwaitedConfirmation], Bool) in
                var expired: [AwaitedConfirmation] = []
                while let first = state.deadlines.first, first.at <= now {
                    state.deadlines.removeFirst()
                    if let awaited = state.awaitingConfirmation.removeValue(forKey: first.confirmID) { expired.append(awaited) }
                }
                if state.awaitingConfirmation.isEmpty {
                    state.deadlines.removeAll()
                    state.isExpiring = false
                    return (expired, true)
                }
                return (expired, false)
            }
            for awaited in expired {
                awaited.confirmed(false)
                confirmations.record(confirmed: false)
            }
            if done { return }
        }
    }

    /// `{"id", "type": "event", "event": {...the payload..., "id", "title", "body", "message", "encrypted"?,
    /// "hass_confirm_id"?}}`;
    /// a Live Activity push adds `push_type: "liveactivity"` and `live_activity_token` (docs/websocket.md).
    /// The payload is the notification's content rendered by the renderer of the device's platform (the APNs payload,
    /// or for an FCM device the FCM message: `notification`, `data`, `android`), not shortened: the channel has no
    /// size limit. `title` and `body` are the content's.
    func eventBody(for notification: PushNotification, platform: Platform) -> JSONObject? {
        var event: JSONObject
        var title: String?
        var body: String?
        if let content = notification.content {
            let renderer = renderers.renderer(for: platform)
            event = renderer.render(content, priority: notification.priority, collapseID: notification.collapseID).payload
            title = content.title
            body = content.body
            // A pw1 envelope at the top level whatever the platform (docs/e2e.md); title and body are its placeholder.
            if let envelope = content.encrypted { event["encrypted"] = .string(envelope.text) }
        } else {
            // A row stored before Herald kept the content: its stored payload, and what its alert shows.
            guard let stored = try? JSONValue.decode(notification.payload).objectValue else { return nil }
            event = stored
            let alert = stored["aps"]?.objectValue?["alert"]?.objectValue ?? stored["notification"]?.objectValue
            let data = stored["data"]?.objectValue
            title = (alert?["title"] ?? data?["title"])?.stringValue
            body = (alert?["body"] ?? data?["message"] ?? data?["body"])?.stringValue
        }
        event["id"] = .string(notification.id.lowercasedText)
        if let title { event["title"] = .string(title) }
        if let body {
            event["body"] = .string(body)
            event["message"] = .string(body)
        }
        if let token = notification.liveActivityToken {
            // Everything the APNs push carries: its `aps` (event, content-state, attributes, dates, alert); the token
            // and the push type say which activity and that it is one.
            event["push_type"] = .string(PushType.liveactivity.rawValue)
            event["live_activity_token"] = .string(token)
        }
        return event
    }

    /// One subscriber's event: the body, with the confirmation id when the subscriber confirms.
    static func event(_ body: JSONObject, subscriber: Subscriber, confirmID: String) -> String {
        var event = body
        if subscriber.supportsConfirm { event["hass_confirm_id"] = .string(confirmID) }
        let message: JSONValue = ["id": .int(subscriber.subscriptionMessageID), "type": "event", "event": .object(event)]
        return (try? message.encoded()).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    // MARK: Service

    /// Runs until graceful shutdown, then closes every socket.
    public func run() async throws {
        try? await gracefulShutdown()
        let (subscribers, waiters) = state.withLock { state in
            state.isShuttingDown = true
            let subscribers = state.subscribers.values.flatMap(\.values)
            let waiters = state.awaitingConfirmation.values.map(\.confirmed)
            state.subscribers = [:]
            state.awaitingConfirmation = [:]
            return (subscribers, waiters)
        }
        for waiter in waiters { waiter(false) }
        for subscriber in subscribers {
            await subscriber.socket.close(.goingAway, reason: "Herald is shutting down")
        }
        logger.info("WebSocket channel closed", metadata: ["sockets": "\(subscribers.count)"])
    }
}

/// A subscribed socket, as the hub sees it (``WebSocketConnection``).
protocol SubscribedSocket: Sendable {
    /// Queues an event for writing; false when the socket is closing or `limit` events are not written yet.
    func offer(event: String, limit: Int) -> Bool
    /// Sends a close frame with `code`; the connection closes once the client answers it.
    func close(_ code: WebSocketErrorCode, reason: String?) async
}

extension WebSocketConnection: SubscribedSocket {}
