import Foundation
import HeraldCore
import Logging
import ServiceLifecycle
import Synchronization

/// Delivers the callback outbox (a `Service`): claims due callbacks from the store with a lease (so that with several
/// instances each attempt is made by one, and a crashed instance's are taken again once its lease expires), signs each
/// with its token's secret, makes the attempt (``CallbackTransport``), and saves what ``CallbackRetryPolicy`` makes of
/// the answer. Attempts run side by side, at most ``CallbackConfiguration/maximumInFlight`` at once, and a pass does
/// not wait for them: a slow receiver holds only its own host's places (``CallbackConfiguration/maximumPerHost``).
///
/// At least once: an attempt whose result was not saved before a `kill -9` is made again when its lease expires.
public final class CallbackDispatcher: Service, Sendable {
    static let leaseDuration: TimeInterval = 60
    static let cleanupInterval: TimeInterval = 60
    static let cleanupBatch = 500

    private let store: any APITokenStore & CallbackStore & NotificationStore
    private let transport: any CallbackTransport
    private let clock: any WallClock
    private let instanceID: String
    private let configuration: CallbackConfiguration
    private let policy = CallbackRetryPolicy()
    private let logger: Logger
    private let woken = Atomic(false)
    private let inFlight = Atomic(0)
    private let lastCleanup = Mutex<Date?>(nil)
    private let failureLog = Mutex<ContinuousClock.Instant?>(nil)

    public init(
        store: any APITokenStore & CallbackStore & NotificationStore, transport: any CallbackTransport, clock: any WallClock, instanceID: String,
        configuration: CallbackConfiguration, logger: Logger
    ) {
        self.store = store
        self.transport = transport
        self.clock = clock
        self.instanceID = instanceID
        self.configuration = configuration
        self.logger = logger
    }

    /// Makes the next pass run now (a callback was just enqueued).
    public func wake() { woken.store(true, ordering: .relaxed) }

    /// Attempts in flight on this instance.
    var attemptsInFlight: Int { inFlight.load(ordering: .relaxed) }

    public func run() async throws {
        // Attempts are child tasks of this group: a graceful shutdown stops the passes and lets them finish (each has
        // its deadline).
        await withDiscardingTaskGroup { group in
            var lastPass: ContinuousClock.Instant?
            while !Task.isCancelled, !Task.isShuttingDownGracefully {
                if woken.exchange(false, ordering: .relaxed) || lastPass.map({ .now - $0 >= configuration.pollInterval }) ?? true {
                    lastPass = .now
                    for callback in await pass() {
                        group.addTask { await self.attempt(callback) }
                    }
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        await transport.shutdown()
    }

    /// Claims what is due, as many as there are free places (each counted in flight until its attempt ends).
    func pass() async -> [CallbackDelivery] {
        let now = clock.now()
        do {
            let free = configuration.maximumInFlight - inFlight.load(ordering: .relaxed)
            var claimed: [CallbackDelivery] = []
            if free > 0 {
                claimed = try await store.claimDueCallbacks(
                    at: now, lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(Self.leaseDuration)), limit: free)
                inFlight.add(claimed.count, ordering: .relaxed)
            }
            try? await cleanUp(now: now)
            return claimed
        } catch {
            let shouldLog = failureLog.withLock { last in
                if let last, ContinuousClock.now - last < .seconds(60) { return false }
                last = .now
                return true
            }
            if shouldLog { logger.warning("Callbacks: a pass failed; passes run again", metadata: ["error": "\(error)"]) }
            return []
        }
    }

    /// Deletes finished callbacks older than ``CallbackConfiguration/finishedRetention``, once a minute.
    private func cleanUp(now: Date) async throws {
        let due = lastCleanup.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= Self.cleanupInterval || now < $0 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        _ = try await store.deleteFinishedCallbacks(before: now.addingTimeInterval(-configuration.finishedRetention), limit: Self.cleanupBatch)
    }

    /// One attempt of a claimed callback, and its result saved.
    func attempt(_ callback: CallbackDelivery) async {
        defer { inFlight.subtract(1, ordering: .relaxed) }
        let answer: CallbackAttemptAnswer
        do {
            guard let secret = try await secret(of: callback) else {
                answer = .refused("the API token that sent the notification no longer exists")
                return await save(callback, after: answer)
            }
            answer = await transport.attempt(callback, secret: secret, now: clock.now())
        } catch {
            // The store did not answer: tried again once the lease expires.
            return
        }
        await save(callback, after: answer)
    }

    private func save(_ callback: CallbackDelivery, after answer: CallbackAttemptAnswer) async {
        let now = clock.now()
        let attemptsMade = answer == .hostBusy ? callback.attempts : callback.attempts + 1
        let step = policy.step(after: answer, attemptsMade: attemptsMade, now: now)
        let updated = callback.applying(step, now: now)
        switch step {
        case .failed(let reason):
            logger.notice(
                "Callback given up", metadata: ["callback": "\(callback.id)", "attempts": "\(updated.attempts)", "reason": "\(reason)"])
        case .gone:
            logger.info("Callback receiver answered 410; not retried", metadata: ["callback": "\(callback.id)"])
        case .delivered, .retry:
            break
        }
        do {
            try await store.completeCallbackAttempt(updated, owner: instanceID)
        } catch {
            logger.warning("Callbacks: could not save an attempt; it is made again when its lease expires", metadata: ["error": "\(error)"])
        }
    }

    /// The signing secret of the token that sent the notification; `nil` when the token is gone.
    private func secret(of callback: CallbackDelivery) async throws -> Data? {
        let token = try await store.apiTokens(deviceID: callback.deviceID).first { $0.id == callback.tokenID }
        return token.flatMap { CallbackSigning.secret(tokenHash: $0.tokenHash) }
    }
}

/// Where callbacks are enqueued: receipts that end (acknowledged, expired) and the tokens' delivery outcomes. The
/// callback is durable when ``enqueue(_:data:url:deviceID:tokenID:)`` returns, and the dispatcher is woken.
///
/// ```swift
/// try await outbox.enqueue(.acknowledged, data: receiptJSON, url: callbackURL, deviceID: device.id, tokenID: token.id)
/// ```
public struct CallbackOutbox: Sendable {
    let store: any APITokenStore & CallbackStore & NotificationStore
    let dispatcher: CallbackDispatcher?
    let clock: any WallClock

    public init(store: any APITokenStore & CallbackStore & NotificationStore, dispatcher: CallbackDispatcher?, clock: any WallClock) {
        self.store = store
        self.dispatcher = dispatcher
        self.clock = clock
    }

    /// Stores a callback of `event` with `data`, due now, and wakes the dispatcher; returns it.
    @discardableResult
    public func enqueue(
        _ event: CallbackEvent, data: JSONObject, url: String, deviceID: Device.ID, tokenID: UUID
    ) async throws -> CallbackDelivery {
        let callback = try CallbackDelivery.make(event: event, data: data, url: url, deviceID: deviceID, tokenID: tokenID, now: clock.now())
        try await store.enqueueCallback(callback)
        dispatcher?.wake()
        return callback
    }
}
