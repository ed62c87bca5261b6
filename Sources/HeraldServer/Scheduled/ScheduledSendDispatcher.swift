import Foundation
import HeraldCore
import HeraldDelivery
import Logging
import ServiceLifecycle
import Synchronization

/// Sends scheduled notifications when they are due (a `Service`): claims due sends from the store with a lease (as the
/// outbox does: several instances each take different ones, a crashed instance's are taken again once its lease
/// expires), sends each through the ``SendPipeline`` (counted against the daily limit now), and saves what happened:
/// a one-time send becomes `sent` or `failed` (`quota_exceeded`, …); a repeating one moves to its next fire (a send that
/// found the quota used up is skipped) until its `until` or `count` ends it (`sent`).
///
/// Crash window: a send that went out but whose outcome was not saved before a `kill -9` goes out again when its lease
/// expires (at most once more).
final class ScheduledSendDispatcher: Service, Sendable {
    static let leaseDuration: TimeInterval = 60
    static let batch = 50

    private let store: any DeviceStore & ScheduledSendStore
    private let pipeline: SendPipeline
    private let clock: any WallClock
    private let instanceID: String
    private let pollInterval: Duration
    private let logger: Logger
    private let passes = PassLoop()
    /// A store that does not answer fails every pass: logged at most once a minute.
    private let failureLog = Mutex<(last: ContinuousClock.Instant?, failures: Int)>((nil, 0))

    init(
        store: any DeviceStore & ScheduledSendStore, pipeline: SendPipeline, clock: any WallClock, instanceID: String, pollInterval: Duration = .seconds(1),
        logger: Logger
    ) {
        self.store = store
        self.pipeline = pipeline
        self.clock = clock
        self.instanceID = instanceID
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// Makes the next pass run now.
    func wake() { passes.wake() }

    func run() async throws {
        await passes.run(every: pollInterval) {
            do {
                while try await self.pass() == Self.batch, !Task.isCancelled {}
            } catch {
                if let failures = self.recordFailure() {
                    self.logger.warning(
                        "Scheduled sends: passes fail; they run again", metadata: ["error": "\(error)", "failed_passes": "\(failures)"])
                }
            }
        }
    }

    /// Counts a failed pass; the number of failures to log (those since the last line), at most once a minute.
    private func recordFailure() -> Int? {
        failureLog.withLock { log in
            log.failures += 1
            let now = ContinuousClock.now
            if let last = log.last, now - last < .seconds(60) { return nil }
            log.last = now
            defer { log.failures = 0 }
            return log.failures
        }
    }

    /// Claims what is due now and sends it; returns how many it claimed.
    @discardableResult
    func pass() async throws -> Int {
        let now = clock.now()
        let claimed = try await store.claimDueScheduledSends(
            at: now, lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(Self.leaseDuration)), limit: Self.batch)
        await withTaskGroup(of: Void.self) { group in
            for send in claimed { group.addTask { await self.fire(send) } }
        }
        return claimed.count
    }

    private func fire(_ send: ScheduledSend) async {
        var updated = send
        let firedAt = send.nextAt ?? clock.now()
        let outcome = await self.send(send)
        switch outcome {
        case .sent(let notificationID):
            updated.sentCount += 1
            updated.lastError = nil
            updated.lastNotificationID = notificationID
        case .refused(let reason), .unavailable(let reason):
            updated.lastError = reason
        }
        if case .unavailable = outcome {
            // The store did not answer: tried again once the lease expires (the send stays due).
            return
        }
        if send.recurrence != nil {
            updated.nextAt = updated.nextFire(after: max(firedAt, clock.now()))
            updated.status = updated.nextAt == nil ? .sent : .scheduled
        } else {
            updated.nextAt = nil
            if case .sent = outcome { updated.status = .sent } else { updated.status = .failed }
        }
        updated.updatedAt = clock.now()
        do {
            try await store.completeScheduledSend(updated, owner: instanceID)
        } catch {
            logger.warning("Scheduled sends: could not save a send's outcome; it goes out again when its lease expires", metadata: ["error": "\(error)"])
        }
    }

    private enum Outcome {
        case sent(UUID)
        case refused(String)
        case unavailable(String)
    }

    private func send(_ send: ScheduledSend) async -> Outcome {
        do {
            guard let device = try await store.device(id: send.deviceID) else { return .refused("device_not_found") }
            let (draft, pushes) = try ScheduledNotification(stored: send.notification).prepared(tokenID: send.tokenID)
            do throws(SendError) {
                let receipt = pushes ? try await pipeline.send(draft, to: device) : try await pipeline.keep(draft, for: device)
                return .sent(receipt.notification.id)
            } catch {
                switch error {
                case .quotaExceeded: return .refused("quota_exceeded")
                case .exemptQuotaExceeded: return .refused("exempt_limit_reached")
                case .backlogFull: return .refused("backlog_full")
                case .deviceInactive: return .refused("device_inactive")
                case .payloadTooLarge, .payloadNotEncodable: return .refused("payload_too_large")
                case .rejectedByProvider(let id, _, _), .deadTokenDetected(let id, _, _): return .sent(id)
                case .storeUnavailable(let cause): return .unavailable(cause)
                }
            }
        } catch let error as APIError {
            return .refused(error.field.map { "invalid_notification: \($0)" } ?? "invalid_notification")
        } catch {
            return .unavailable("\(error)")
        }
    }
}
