import Foundation
import HeraldCore

/// How much of a topic's send was accepted: every member's notification, some, or none.
public enum FanoutDelivery: String, Sendable, Equatable {
    case all, partial, none
}

/// One member's part of a topic's send.
public struct FanoutMemberOutcome: Sendable, Equatable {
    /// What became of it: `delivered` (a provider or a client took it on the first attempt), `queued` (stored, being
    /// tried), `stored` (stored; nothing can deliver to the device yet), `skipped` (not stored: the member's limit, a
    /// dead token, a payload that does not fit its platform) or `failed` (stored, and refused for good on the first
    /// attempt).
    public enum Delivery: String, Sendable, Equatable {
        case delivered, queued, stored, skipped, failed
    }

    /// The membership (``TopicMember/id``).
    public var memberID: UUID
    public var deviceID: Device.ID
    /// The member's notification as it stands; `nil` when it was skipped.
    public var notification: PushNotification?
    public var delivery: Delivery
    /// Why it was skipped or failed.
    public var reason: SendError?
    /// Whether the body was shortened to fit the member's provider.
    public var truncated: Bool

    /// Whether the member's notification was stored (whatever its first attempt said).
    public var isAccepted: Bool { notification != nil }
}

/// What the sender of a topic's send is told.
public struct FanoutReceipt: Sendable, Equatable {
    /// One per member, in the order the members were given.
    public var members: [FanoutMemberOutcome]

    /// `all` when every member's notification was stored and none failed on its first attempt, `none` when none was
    /// stored, `partial` otherwise.
    public var delivery: FanoutDelivery {
        let accepted = members.count { $0.isAccepted }
        if accepted == 0 { return .none }
        return members.allSatisfy { $0.isAccepted && $0.delivery != .failed } ? .all : .partial
    }
}

/// One member of a topic to send to.
public struct FanoutTarget: Sendable, Equatable {
    public var memberID: UUID
    public var device: Device

    public init(memberID: UUID, device: Device) {
        self.memberID = memberID
        self.device = device
    }
}

extension SendPipeline {
    /// Sends one draft to several devices (a topic's members): each rendered and fitted for its own platform, then
    /// **all accepted in one transaction** (durable before this returns), each counted against its own daily limit and
    /// backlog. A member over its limit, inactive or whose payload cannot fit is skipped and reported; the others are
    /// stored. Those leased to this instance are delivered at once, and the first attempts are awaited together (up
    /// to the delivery wait), as ``send(_:to:)`` awaits one.
    ///
    /// Throws only when the store failed: then nothing was stored.
    public func send(_ draft: NotificationDraft, toMembers targets: [FanoutTarget]) async throws(SendError) -> FanoutReceipt {
        let now = clock.now()
        let day = UTCDay(containing: now)
        var outcomes: [FanoutMemberOutcome] = targets.map {
            FanoutMemberOutcome(memberID: $0.memberID, deviceID: $0.device.id, notification: nil, delivery: .skipped, reason: nil, truncated: false)
        }
        var accepts: [FanoutAccept] = []
        var acceptIndex: [Int] = []
        for (index, target) in targets.enumerated() {
            let device = target.device
            guard device.isActive else {
                outcomes[index].reason = .deviceInactive(reason: device.inactiveReason ?? "the device has no push token")
                continue
            }
            let fitted: FittedPayload
            do throws(SendError) {
                fitted = try self.fitted(draft, for: device)
            } catch {
                outcomes[index].reason = error
                continue
            }
            outcomes[index].truncated = fitted.truncated
            let notification = PushNotification(
                id: .timeOrdered(at: now), deviceID: device.id, pushType: draft.pushType, priority: fitted.priority,
                collapseID: draft.collapseID, payload: fitted.data, quotaDay: draft.isExemptFromQuota ? nil : day.description,
                createdAt: now, expiresAt: Self.expiry(draft.expiresAt, now: now, timeToLive: configuration.timeToLive),
                liveActivityToken: draft.liveActivityToken, renderedBy: fitted.renderedBy, content: draft.content)
            let quota = QuotaRequest(
                day: day.description, maximum: draft.isExemptFromQuota ? nil : dailyLimit(of: device),
                exemptMaximum: draft.isExemptFromQuota ? configuration.exemptDailyLimit : nil,
                pendingMaximum: configuration.maximumPendingPerDevice)
            accepts.append(FanoutAccept(notification: notification, quota: quota, device: device))
            acceptIndex.append(index)
        }

        let decided: [(AcceptDecision, AcceptRoute)]
        do {
            decided = try await engine.acceptAll(accepts)
        } catch {
            throw .storeUnavailable("\(error)")
        }

        var leased: [(index: Int, accept: FanoutAccept)] = []
        var quotas: [Int: QuotaStatus] = [:]
        for ((decision, route), (index, accept)) in zip(decided, zip(acceptIndex, accepts)) {
            let maximum = dailyLimit(of: accept.device)
            do throws(SendError) {
                let counters = try acceptedCounters(decision, maximum: maximum, day: day)
                let quota = QuotaStatus(counters: counters, maximum: maximum, resetsAt: day.end)
                quotas[index] = quota
                if case .accepted(_, usedUpQuota: true) = decision { await announceQuotaUsedUp(to: accept.device, quota: quota) }
            } catch {
                outcomes[index].reason = error
                continue
            }
            outcomes[index].notification = accept.notification
            switch route {
            case .parked: outcomes[index].delivery = .stored
            case .scheduled: outcomes[index].delivery = .queued
            case .leased:
                outcomes[index].delivery = .queued
                leased.append((index, accept))
            }
        }

        let engine = engine
        let reports = await withTaskGroup(of: (Int, AttemptReport?).self) { group in
            for (index, accept) in leased {
                group.addTask { (index, await engine.deliver(accept.notification, device: accept.device)) }
            }
            return await group.reduce(into: [(Int, AttemptReport?)]()) { $0.append($1) }
        }
        for (index, report) in reports {
            guard let report, let accepted = quotas[index] else { continue }
            let quota = Self.released(accepted, by: report.notification)
            outcomes[index].notification = report.notification
            switch report.verdict {
            case .delivered: outcomes[index].delivery = .delivered
            case .willRetry, .handedOver: outcomes[index].delivery = .queued
            case .parked: outcomes[index].delivery = .stored
            case .deadToken(let reason), .deviceUnavailable(let reason):
                outcomes[index].delivery = .failed
                outcomes[index].reason = .deadTokenDetected(notificationID: report.notification.id, reason: reason, quota: quota)
            case .refused(let reason):
                outcomes[index].delivery = .failed
                outcomes[index].reason = .rejectedByProvider(notificationID: report.notification.id, reason: reason, quota: quota)
            case .expired:
                outcomes[index].delivery = .failed
                outcomes[index].reason = .rejectedByProvider(
                    notificationID: report.notification.id, reason: report.notification.lastError ?? "expired", quota: quota)
            }
        }
        return FanoutReceipt(members: outcomes)
    }
}
