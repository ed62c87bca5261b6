import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// How long Herald keeps what it no longer needs (`HERALD_RETENTION`, `HERALD_DEVICE_IDLE_DAYS`).
public struct RetentionPolicy: Sendable, Equatable {
    /// The shortest retention accepted (seconds).
    public static let minimumRetention: TimeInterval = 60
    /// The default: 30 days.
    public static let defaultRetention: TimeInterval = 30 * 86_400

    /// Finished notifications older than this (since their last change) are deleted (seconds, at least 60).
    public var retention: TimeInterval
    /// Devices idle for this many days are removed with their data; `nil`: never.
    public var deviceIdleDays: Int?
    /// Rows deleted per transaction: small, so that sends never wait long behind a deletion.
    public var batchSize: Int
    /// Time between passes: what passed the retention is deleted within this (plus the pass itself).
    public var interval: Duration

    public init(
        retention: TimeInterval = RetentionPolicy.defaultRetention, deviceIdleDays: Int? = nil, batchSize: Int = 500,
        interval: Duration = .seconds(30)
    ) {
        self.retention = retention
        self.deviceIdleDays = deviceIdleDays
        self.batchSize = batchSize
        self.interval = interval
    }

    /// Finished notifications last changed before this are deleted at `now`.
    public func notificationCutoff(at now: Date) -> Date { now.addingTimeInterval(-retention) }

    /// Devices not seen since this are idle at `now`; `nil` when idle devices are kept.
    public func idleCutoff(at now: Date) -> Date? {
        deviceIdleDays.map { now.addingTimeInterval(-Double($0) * 86_400) }
    }
}

/// What one pass of the ``RetentionSweeper`` deleted.
public struct RetentionPass: Sendable, Equatable {
    public var notificationsDeleted = 0
    public var scheduledSendsDeleted = 0
    public var receiptsDeleted = 0
    public var devicesDeleted: [Device.ID] = []

    public init(notificationsDeleted: Int = 0, scheduledSendsDeleted: Int = 0, devicesDeleted: [Device.ID] = []) {
        self.notificationsDeleted = notificationsDeleted
        self.scheduledSendsDeleted = scheduledSendsDeleted
        self.devicesDeleted = devicesDeleted
    }
}

/// Keeps the store bounded, off the request path (a `Service`): every ``RetentionPolicy/interval`` it deletes finished
/// notifications past the retention and idle devices, in small batches (one transaction each, the writer free for
/// sends in between), then gives freed space back (``RetentionStore/reclaimSpace()``). It also writes down, once a
/// pass, which devices were heard from (``deviceSeen(_:)``), for the idle rule.
///
/// Time comes from the ``WallClock``: tests move a `TestClock` and call ``sweep()`` (or ``wake()`` the service).
///
/// ```swift
/// let sweeper = RetentionSweeper(store: store, policy: RetentionPolicy(retention: 86_400), clock: SystemClock(), logger: logger)
/// let pass = try await sweeper.sweep()   // or run it under a ServiceGroup
/// ```
public final class RetentionSweeper: Service, Sendable {
    /// The most distinct devices remembered as seen between passes (further sightings wait for the next pass).
    static let maximumSightings = 100_000
    /// How long a canceled scheduled send is kept (it reads `canceled` that long).
    public static let canceledScheduledSendsKept: TimeInterval = 86_400

    public let policy: RetentionPolicy
    private let store: any RetentionStore
    private let clock: any WallClock
    private let logger: Logger
    private let sightings = Mutex<Set<Device.ID>>([])
    private let passes = PassLoop()
    private let onDevicesDeleted: @Sendable ([Device.ID]) async -> Void

    public init(
        store: any RetentionStore, policy: RetentionPolicy, clock: any WallClock, logger: Logger = Logger(label: "herald.retention"),
        onDevicesDeleted: @escaping @Sendable ([Device.ID]) async -> Void = { _ in }
    ) {
        self.store = store
        self.policy = policy
        self.clock = clock
        self.logger = logger
        self.onDevicesDeleted = onDevicesDeleted
    }

    /// The device was heard from now; written to the store at the next pass.
    public func deviceSeen(_ id: Device.ID) {
        sightings.withLock { seen in
            if seen.count < Self.maximumSightings { seen.insert(id) }
        }
    }

    /// Makes the next pass run now.
    public func wake() { passes.wake() }

    public func run() async throws {
        await passes.run(every: policy.interval) {
            do {
                _ = try await self.sweep()
            } catch {
                self.logger.warning("Retention pass failed; it runs again later", metadata: ["error": "\(error)"])
            }
        }
    }

    /// One pass: sightings written, finished notifications past the retention deleted batch by batch, idle devices
    /// removed, free space given back.
    @discardableResult
    public func sweep() async throws -> RetentionPass {
        let now = clock.now()
        var pass = RetentionPass()
        let seen = sightings.withLock { seen in
            defer { seen.removeAll() }
            return Array(seen)
        }
        if !seen.isEmpty { try await store.markDevicesSeen(seen, at: now) }
        let cutoff = policy.notificationCutoff(at: now)
        while !Task.isCancelled {
            let deleted = try await store.deleteFinishedNotifications(before: cutoff, limit: policy.batchSize)
            pass.notificationsDeleted += deleted
            if deleted < policy.batchSize { break }
            await Task.yield()
        }
        while !Task.isCancelled {
            // A canceled scheduled send reads `canceled` for a day (docs/api.md), then goes; sent and failed ones go
            // with the retention.
            let deleted = try await store.deleteFinishedScheduledSends(
                finishedBefore: cutoff, canceledBefore: now.addingTimeInterval(-Self.canceledScheduledSendsKept), limit: policy.batchSize)
            pass.scheduledSendsDeleted += deleted
            if deleted < policy.batchSize { break }
            await Task.yield()
        }
        while !Task.isCancelled {
            // An ended receipt reads its end for 7 days (docs/api.md, "Receipts"), or the retention when shorter.
            let deleted = try await store.deleteEndedReceipts(
                before: ReceiptRules.deletionCutoff(at: now, retention: policy.retention), limit: policy.batchSize)
            pass.receiptsDeleted += deleted
            if deleted < policy.batchSize { break }
            await Task.yield()
        }
        if let idleCutoff = policy.idleCutoff(at: now) {
            while !Task.isCancelled {
                let deleted = try await store.deleteIdleDevices(since: idleCutoff, limit: policy.batchSize)
                pass.devicesDeleted += deleted
                if !deleted.isEmpty { await onDevicesDeleted(deleted) }
                if deleted.count < policy.batchSize { break }
                await Task.yield()
            }
        }
        if pass.notificationsDeleted > 0 || !pass.devicesDeleted.isEmpty {
            try await store.reclaimSpace()
            logger.debug(
                "Retention deleted old notifications and idle devices",
                metadata: ["notifications": "\(pass.notificationsDeleted)", "devices": "\(pass.devicesDeleted.count)"])
        }
        return pass
    }
}
