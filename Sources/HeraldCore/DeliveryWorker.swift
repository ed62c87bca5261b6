import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Drains the outbox: delivers pending notifications through the providers, with bounded concurrency,
/// retries transient failures on a back-off schedule, and resumes whatever a crash left pending.
///
/// It runs as a `Service`. Freshly accepted notifications are handed to it with ``deliver(_:waitingAtMost:)``
/// and start at once; everything else (retries, recovery after a restart, notifications that arrived while
/// all slots were busy) is found by a periodic scan of the store.
public final class DeliveryWorker: Service, Sendable {
    /// Tuning of the worker.
    public struct Configuration: Sendable {
        /// Deliveries in flight at once.
        public var maximumConcurrentDeliveries: Int
        /// How often the store is scanned for due notifications.
        public var scanInterval: Duration
        public var retryPolicy: RetryPolicy

        public init(maximumConcurrentDeliveries: Int = 256, scanInterval: Duration = .seconds(1), retryPolicy: RetryPolicy = .init()) {
            self.maximumConcurrentDeliveries = maximumConcurrentDeliveries
            self.scanInterval = scanInterval
            self.retryPolicy = retryPolicy
        }
    }

    private enum Event: Sendable {
        case submitted(PushNotification)
        case scan
    }

    private struct State {
        var inFlight: Set<PushNotification.ID> = []
        var waiters: [PushNotification.ID: [CheckedContinuation<PushNotification?, Never>]] = [:]
        var missedSubmissions = false
    }

    private let store: any HeraldStore
    private let providers: [Platform: any PushProvider]
    private let localChannel: (any LocalChannel)?
    private let clock: any WallClock
    private let configuration: Configuration
    private let logger: Logger
    private let state = Mutex(State())
    private let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation

    public init(
        store: any HeraldStore, providers: [any PushProvider], localChannel: (any LocalChannel)? = nil,
        clock: any WallClock = SystemClock(), configuration: Configuration = .init(), logger: Logger
    ) {
        self.store = store
        self.providers = Dictionary(providers.map { ($0.platform, $0) }, uniquingKeysWith: { first, _ in first })
        self.localChannel = localChannel
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
    }

    /// Whether something can deliver to this device now: a provider for its platform, or an open local connection.
    public func canDeliver(to device: Device) -> Bool {
        providers[device.platform] != nil && device.token != nil || localChannel?.isConnected(device.id) == true
    }

    /// Starts delivering every pending notification of a device (a client of it just connected).
    public func deliverPending(of deviceID: Device.ID) async {
        do {
            for notification in try await store.pendingNotifications(deviceID: deviceID, limit: 1_000) {
                submit(notification)
            }
        } catch {
            logger.error("Loading pending notifications failed", metadata: ["error": "\(error)"])
        }
    }

    /// Starts delivering a freshly stored notification and waits up to `timeout` for the outcome of the first attempt.
    /// Returns the notification as it stands then (still `pending` when the attempt did not finish in time or must be retried).
    public func deliver(_ notification: PushNotification, waitingAtMost timeout: Duration) async -> PushNotification {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<PushNotification?, Never>) in
            state.withLock { $0.waiters[notification.id, default: []].append(continuation) }
            eventSink.yield(.submitted(notification))
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.resumeWaiters(of: notification.id, with: nil)
            }
        }
        return outcome ?? notification
    }

    /// Starts delivering a freshly stored notification without waiting for it.
    public func submit(_ notification: PushNotification) { eventSink.yield(.submitted(notification)) }

    /// Asks for a scan of the store now (e.g. after a device came back).
    public func wake() { eventSink.yield(.scan) }

    public func run() async throws {
        let sink = eventSink
        let interval = configuration.scanInterval
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                sink.yield(.scan)
            }
        }
        defer { ticker.cancel() }
        logger.info("Delivery worker started", metadata: ["providers": "\(providers.keys.map(\.rawValue).sorted())"])
        await withDiscardingTaskGroup { group in
            eventSink.yield(.scan)  // resume what a previous run left pending
            for await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .submitted(let notification):
                    if claim(notification.id) {
                        group.addTask { await self.attempt(notification) }
                    } else {
                        state.withLock { $0.missedSubmissions = true }
                    }
                case .scan:
                    await scanStore(into: &group)
                }
            }
        }
        logger.info("Delivery worker stopped")
    }

    private func scanStore(into group: inout DiscardingTaskGroup) async {
        let platforms = Set(providers.keys)
        guard !platforms.isEmpty else { return }
        let (free, busy) = state.withLock { state in
            (configuration.maximumConcurrentDeliveries - state.inFlight.count, state.inFlight.count)
        }
        guard free > 0 else { return }
        do {
            let due = try await store.dueNotifications(at: clock.now(), platforms: platforms, limit: free + busy)
            var started = 0
            for notification in due where started < free && claim(notification.id) {
                started += 1
                group.addTask { await self.attempt(notification) }
            }
            state.withLock { $0.missedSubmissions = due.count == free + busy }
        } catch {
            logger.error("Scanning the outbox failed", metadata: ["error": "\(error)"])
        }
    }

    /// Marks a notification as in flight; false if it already is or no slot is free.
    private func claim(_ id: PushNotification.ID) -> Bool {
        state.withLock { state in
            guard state.inFlight.count < configuration.maximumConcurrentDeliveries, !state.inFlight.contains(id) else {
                return false
            }
            state.inFlight.insert(id)
            return true
        }
    }

    private func attempt(_ notification: PushNotification) async {
        let outcome = await deliverOnce(notification)
        let rescan = state.withLock { state in
            state.inFlight.remove(notification.id)
            return state.missedSubmissions
        }
        resumeWaiters(of: notification.id, with: outcome)
        if rescan { eventSink.yield(.scan) }
    }

    private func resumeWaiters(of id: PushNotification.ID, with notification: PushNotification?) {
        let waiters = state.withLock { $0.waiters.removeValue(forKey: id) } ?? []
        for waiter in waiters { waiter.resume(returning: notification) }
    }

    /// One delivery attempt; saves and returns the notification's new state.
    ///
    /// Order: an open local connection first (the WebSocket channel), then the device's cloud provider. With neither,
    /// the notification stays parked as `pending` until a client subscribes or a provider is configured.
    private func deliverOnce(_ original: PushNotification) async -> PushNotification {
        var notification = original
        let logger = self.logger.with(notification: notification.id)
        do {
            // What was read or submitted may be stale: another attempt may have finished it since (a scan that read it
            // while its first attempt was in flight). Only the stored state decides, so nothing is sent twice.
            guard let current = try await store.notification(id: original.id) else { return original }
            // (Half a second of slack: stored times are rounded, and a retry that is almost due may go now.)
            guard current.status == .pending, current.nextAttemptAt <= clock.now().addingTimeInterval(0.5) else { return current }
            notification = current
            var releaseQuota = false
            let device = try await store.device(id: notification.deviceID)
            if notification.expiresAt <= clock.now() {
                notification.status = .expired
                notification.lastError = "Expired before it could be delivered"
                releaseQuota = true
            } else if let device, device.isActive {
                if let localChannel, localChannel.isConnected(device.id),
                    await localChannel.deliver(notification, to: device)
                {
                    notification.attempts += 1
                    notification.status = .delivered
                    notification.providerMessageID = nil
                    notification.lastError = nil
                } else if let provider = providers[device.platform], device.token != nil {
                    notification.attempts += 1
                    let result = await provider.send(notification, to: device)
                    releaseQuota = try await apply(result, to: &notification, device: device, logger: logger)
                } else {
                    return notification  // parked: nothing can deliver it now
                }
            } else {
                notification.status = .failed
                notification.lastError = device.map { "The device must register again: \($0.inactiveReason ?? "it has no push token")" }
                    ?? "The device was removed"
                releaseQuota = true
            }
            notification.updatedAt = clock.now()
            try await store.updateNotification(notification, releaseQuota: releaseQuota)
        } catch {
            // The store could not save the outcome: the notification stays pending there and will be tried again.
            logger.error("Saving a delivery outcome failed", metadata: ["error": "\(error)"])
            return original
        }
        return notification
    }

    /// Applies a provider's verdict; returns whether the notification gives its quota back.
    private func apply(_ result: DeliveryResult, to notification: inout PushNotification, device: Device, logger: Logger) async throws -> Bool {
        let now = clock.now()
        switch result {
        case .delivered(let messageID):
            notification.status = .delivered
            notification.providerMessageID = messageID
            notification.lastError = nil
            return false
        case .deadToken(let reason):
            notification.status = .failed
            notification.lastError = reason
            if let token = device.token {
                try await store.deactivateDevice(id: device.id, token: token, reason: reason, at: now)
            }
            logger.notice("Device token is dead; device marked inactive", metadata: ["reason": "\(reason)"])
            return true
        case .retry(let reason, let minimum):
            let seconds = minimum.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
            let next = now.addingTimeInterval(
                configuration.retryPolicy.delay(afterAttempts: notification.attempts, providerMinimum: seconds))
            notification.lastError = reason
            logger.info("Delivery will be retried", metadata: ["reason": "\(reason)", "attempts": "\(notification.attempts)"])
            guard next < notification.expiresAt else {
                notification.status = .expired
                return true
            }
            notification.nextAttemptAt = next
            return false
        case .failed(let reason):
            notification.status = .failed
            notification.lastError = reason
            logger.warning("Provider refused the notification", metadata: ["reason": "\(reason)"])
            return true
        }
    }
}

extension Logger {
    func with(notification id: PushNotification.ID) -> Logger {
        var copy = self
        copy[metadataKey: "notification"] = "\(id.uuidString.lowercased())"
        return copy
    }
}
