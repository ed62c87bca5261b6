import Foundation
import Logging
import Synchronization

/// One delivery attempt: the channel order (local connection, another instance, the provider) and the verdicts.

extension DeliveryWorker {
    /// One delivery attempt: decides, delivers, saves the outcome (group commit). `nil` when the outcome could not be
    /// saved (the lease then expires and the notification is tried again).
    func attempt(_ work: Work) async -> SlotResult {
        var notification = work.notification
        let now = clock.now()
        var outcome: DeliveryOutcome
        let verdict: AttemptVerdict
        var provider = DeliveryMetrics.noProvider
        do {
            let device: Device?
            if let known = work.device { device = known } else { device = try await store.device(id: notification.deviceID) }
            if work.confirmedLocally == true {
                // A client has it, whatever the time now.
                provider = Platform.websocket.rawValue
                (outcome, verdict) = Self.deliveredLocally(notification)
            } else if notification.expiresAt <= now {
                notification.status = .expired
                notification.lastError = "Expired before it could be delivered"
                outcome = DeliveryOutcome(notification: notification, releasesQuota: true)
                verdict = .expired
            } else if let device, device.isActive {
                guard let delivery = await deliver(work, to: device, provider: &provider) else { return .awaitingConfirmation }
                (outcome, verdict) = delivery
            } else {
                let reason = device.map { "The device must register again: \($0.inactiveReason ?? "it has no push token")" }
                    ?? "The device was removed"
                notification.status = .failed
                notification.lastError = reason
                outcome = DeliveryOutcome(notification: notification, releasesQuota: true)
                verdict = .deviceUnavailable(reason: reason)
            }
            outcome.notification.updatedAt = clock.now()
            // Counted when the channel answered (what the counters describe), before anyone is told.
            metrics.record(verdict, provider: provider)
            // A delivery changes nothing the sender's next request depends on (no quota given back, no device
            // deactivated), so its sender is answered once the outcome is queued, not once it is durable: one commit
            // less on the request's path. Status reads go through the same queue (`GroupCommit.notification(id:)`).
            var answerSender: (@Sendable () -> Void)?
            if verdict == .delivered {
                let report = AttemptReport(notification: outcome.notification, verdict: verdict)
                answerSender = { self.answerWaiter(with: report) }
            }
            // An outcome that nobody waits for (its sender is answered above, or has gone, or there never was one)
            // may wait for the next accept's commit. A hand-over waits for it: the other instance claims next.
            let nobodyWaits: Bool
            switch verdict {
            case .delivered: nobodyWaits = true
            case .handedOver: nobodyWaits = false
            default: nobodyWaits = state.withLock { $0.waiters[notification.id] == nil }
            }
            try await outbox.save(outcome, mayWait: nobodyWaits, whenQueued: answerSender)
            if case .handedOver(let instance) = verdict {
                // The lease is given back (saved above): the instance with the client claims it now.
                try? await cluster?.send(.deliverPending(deviceID: notification.deviceID, instance: instance))
            }
        } catch {
            logger.error(
                "Saving a delivery outcome failed; the notification is tried again when its lease expires",
                metadata: ["notification": "\(notification.id)", "error": "\(error)"])
            return .finished(nil)
        }
        return .finished(AttemptReport(notification: outcome.notification, verdict: verdict))
    }

    static func deliveredLocally(_ original: PushNotification) -> (DeliveryOutcome, AttemptVerdict) {
        var notification = original
        notification.attempts += 1
        notification.status = .delivered
        notification.providerMessageID = nil
        notification.lastError = nil
        return (DeliveryOutcome(notification: notification), .delivered)
    }

    /// Order: an open local connection first (the WebSocket channel), then one on another instance (which is handed
    /// the notification), then the device's cloud provider. `provider` is set to the channel that made the attempt.
    /// `nil` when a client has the notification and its confirmation is awaited: the attempt goes on (``resume(_:)``)
    /// when the channel calls back, without holding a slot meanwhile.
    func deliver(
        _ work: Work, to device: Device, provider channel: inout String
    ) async -> (DeliveryOutcome, AttemptVerdict)? {
        var notification = work.notification
        let now = clock.now()
        // After an unconfirmed offer the client counts as connected (it was), whatever it did since.
        let isConnected = work.confirmedLocally == false || localChannel?.isConnected(device.id) == true
        if isConnected { channel = Platform.websocket.rawValue }
        if work.confirmedLocally == nil, isConnected, let localChannel {
            let offered = localChannel.offer(notification, to: device) { [self] confirmed in
                var next = work
                next.device = device
                next.confirmedLocally = confirmed
                resume(next)
            }
            switch offered {
            case .delivered: return Self.deliveredLocally(notification)
            case .awaitingConfirmation: return nil
            case .notTaken: break
            }
        }
        if !isConnected, let instance = cluster?.instance(connectedTo: device.id, besides: instanceID) {
            // Still pending, lease given back: that instance claims it (and falls back to the provider itself if its
            // client does not confirm); due here again only if it does not.
            notification.nextAttemptAt = now.addingTimeInterval(configuration.handOverTimeout)
            return (DeliveryOutcome(notification: notification), .handedOver(instance: instance))
        }
        if let provider = providers[device.platform], device.token != nil {
            channel = provider.platform.rawValue
            notification.attempts += 1
            return apply(await provider.send(notification, to: device), to: notification, device: device)
        }
        if isConnected {
            // A connected client did not confirm and nothing else can deliver: try it again with back-off.
            notification.attempts += 1
            return retry(notification, reason: "The WebSocket client did not confirm the notification", after: nil, at: now)
        }
        // Parked: due again at its expiry, unless a client connects or the device registers again first.
        notification.nextAttemptAt = notification.expiresAt
        return (DeliveryOutcome(notification: notification, isParked: true), .parked)
    }

    /// Applies a provider's verdict (classified once, by the provider).
    func apply(_ result: DeliveryResult, to original: PushNotification, device: Device) -> (DeliveryOutcome, AttemptVerdict) {
        var notification = original
        switch result {
        case .delivered(let messageID):
            notification.status = .delivered
            notification.providerMessageID = messageID
            notification.lastError = nil
            return (DeliveryOutcome(notification: notification), .delivered)
        case .deadToken(let reason) where notification.liveActivityToken != nil:
            // The activity ended (or its push-to-start token changed): this push fails, the device stays active.
            notification.status = .failed
            notification.lastError = reason
            logger.info("Live Activity token is dead", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
            return (DeliveryOutcome(notification: notification, releasesQuota: true), .deadToken(reason: reason))
        case .deadToken(let reason):
            notification.status = .failed
            notification.lastError = reason
            logger.notice("Device token is dead; device marked inactive", metadata: ["device": "\(device.id)", "reason": "\(reason)"])
            return (DeliveryOutcome(notification: notification, releasesQuota: true, deadToken: device.token), .deadToken(reason: reason))
        case .retry(let reason, let minimum):
            return retry(notification, reason: reason, after: minimum, at: clock.now())
        case .failed(let reason):
            notification.status = .failed
            notification.lastError = reason
            logger.warning("Provider refused the notification", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
            return (DeliveryOutcome(notification: notification, releasesQuota: true), .refused(reason: reason))
        }
    }

    func retry(_ original: PushNotification, reason: String, after minimum: Duration?, at now: Date) -> (DeliveryOutcome, AttemptVerdict) {
        var notification = original
        let seconds = minimum.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        let next = now.addingTimeInterval(configuration.retryPolicy.delay(afterAttempts: notification.attempts, providerMinimum: seconds))
        notification.lastError = reason
        guard next < notification.expiresAt else {
            notification.status = .expired
            return (DeliveryOutcome(notification: notification, releasesQuota: true), .expired)
        }
        logger.debug("Delivery will be retried", metadata: ["notification": "\(notification.id)", "reason": "\(reason)"])
        notification.nextAttemptAt = next
        return (DeliveryOutcome(notification: notification), .willRetry)
    }
}
