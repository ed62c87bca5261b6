import Foundation

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
    /// It writes through the store directly rather than through the group commit, whose batches may split a group:
    /// the store's own deadline (PostgreSQL's) bounds it.
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
        let decisions = try await store.commit(WriteBatch(accepts: requests, owner: instanceID))
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
