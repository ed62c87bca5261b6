import Foundation
import HeraldCore
import Synchronization

/// One notification of a multi-notification accept (``DeliveryEngine/acceptAll(_:)``).
public struct FanoutAccept: Sendable {
    public var notification: PushNotification
    public var quota: QuotaRequest
    public var device: Device

    public init(notification: PushNotification, quota: QuotaRequest, device: Device) {
        self.notification = notification
        self.quota = quota
        self.device = device
    }
}

extension DeliveryEngine {
    /// Accepts several notifications in **one** transaction of the store (a topic's send: all of them are durable, or
    /// none, when this returns), each counted against its own device's quota and backlog in order; one refused for its
    /// device's limit is not stored and does not stop the others. Each is leased to this instance when something can
    /// deliver it now and delivery is not saturated, as ``accept(_:quota:for:startingDelivery:)`` does for one; the
    /// caller delivers the leased ones (``deliver(_:device:)``), the others are scheduled here.
    ///
    /// It writes through the store directly rather than through the group commit, whose batches may split a group,
    /// under the same deadline (``commit(_:)``).
    public func acceptAll(_ accepts: [FanoutAccept]) async throws -> [(AcceptDecision, AcceptRoute)] {
        guard !accepts.isEmpty else { return [] }
        var requests: [AcceptRequest] = []
        var deliverable: [Bool] = []
        requests.reserveCapacity(accepts.count)
        for accept in accepts {
            let canDeliver = canDeliver(to: accept.device)
            deliverable.append(canDeliver)
            let lease = canDeliver ? leaseForFreshNotification(for: accept.device.id) : nil
            requests.append(AcceptRequest(notification: accept.notification, quota: accept.quota, lease: lease))
        }
        let decisions = try await commit(requests)
        return zip(requests, zip(decisions, deliverable)).map { request, decided in
            let (decision, canDeliver) = decided
            guard case .accepted = decision else { return (decision, .parked) }
            if request.lease != nil { return (decision, .leased) }
            guard canDeliver else { return (decision, .parked) }
            scheduler.schedule(request.notification)
            return (decision, .scheduled)
        }
    }
}

extension DeliveryEngine {
    /// Commits `requests` in one transaction within the store's deadline (`HERALD_STORE_TIMEOUT_MS`), as the group
    /// commit bounds a single accept: past it the transaction is given up (its ``CommitGate`` no longer passes, so it
    /// rolls back and nothing is stored) and ``StoreDeadlineExceeded`` is thrown. A commit already past its gate when
    /// the deadline falls is on its way: its answer is awaited, so that a send is never refused after it was stored.
    func commit(_ requests: [AcceptRequest]) async throws -> [AcceptDecision] {
        guard let timeout = configuration.storeTimeout else { return try await store.commit(WriteBatch(accepts: requests, owner: instanceID)) }
        let state = FanoutCommit()
        let deadline = ContinuousClock.now + timeout
        let gate = CommitGate(deadline: deadline) {
            try state.withLock { commit in
                guard !commit.isGivenUp else { throw CommitAbandoned() }
                commit.isPast = true
            }
        }
        let store = store
        let owner = instanceID
        let deadlines = fanoutDeadlines
        return try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.waiter = continuation }
            let token = deadlines.arm(at: deadline) {
                let waiter = state.withLock { commit -> CheckedContinuation<[AcceptDecision], any Error>? in
                    guard !commit.isPast else { return nil }  // on its way: the commit's own answer comes
                    commit.isGivenUp = true
                    return commit.waiter.take()
                }
                waiter?.resume(throwing: StoreDeadlineExceeded("a topic's accept", after: timeout))
            }
            Task {
                let result: Result<[AcceptDecision], any Error>
                do {
                    result = .success(try await store.commit(WriteBatch(accepts: requests, owner: owner, gate: gate)))
                } catch {
                    result = .failure(error)
                }
                deadlines.disarm(token)
                state.withLock { $0.waiter.take() }?.resume(with: result)
            }
        }
    }
}

/// Where one fan-out commit stands against its deadline.
private final class FanoutCommit: Sendable {
    struct State {
        var waiter: CheckedContinuation<[AcceptDecision], any Error>?
        /// The store passed the gate: the commit is on its way.
        var isPast = false
        /// The deadline fell first: the gate throws, the transaction rolls back.
        var isGivenUp = false
    }

    private let state = Mutex(State())

    func withLock<Value>(_ body: (inout State) throws -> Value) rethrows -> Value {
        try state.withLock { try body(&$0) }
    }
}
