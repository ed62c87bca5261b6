import Foundation
import HeraldCore
import Synchronization

/// A client's change that decides its activity's push in its own write (``ActivityService/change(_:slug:of:mayCreate:)``),
/// handed to this instance's ``ActivityDispatcher`` in memory: the change and the push's lease are one write, and the
/// dispatcher sends the push without visiting the store first.
///
/// A change decides the push when nothing of the activity is in flight (no pending push, no lease), or when the push
/// an earlier change on this instance decided is still waiting here: the newer decision replaces it, so that changes
/// made before the dispatcher sends become one push of the newest state. While the dispatcher sends a push, or another
/// instance holds the activity, a change decides nothing: the push's outcome (or the other instance's claim) finds the
/// newer change and pushes it, as it did before. A decided push lost with its instance is claimed once its lease
/// expires (``ActivityPushDecider``).
public final class ActivityHandOver: Sendable {
    private enum Entry {
        case waiting(PreparedActivityPush, Device)
        case sending
    }

    /// A push decided by a change and waiting for the dispatcher.
    struct Decided: Sendable {
        var key: ActivityKey
        var push: PreparedActivityPush
        var device: Device
    }

    let decider: ActivityPushDecider
    private let entries = Mutex<[ActivityKey: Entry]>([:])
    private let wakeDispatcher: @Sendable () -> Void

    init(decider: ActivityPushDecider, wake: @escaping @Sendable () -> Void) {
        self.decider = decider
        self.wakeDispatcher = wake
    }

    /// Decides the push of `record` (the row a change is about to write) if this change may (see above), writing the
    /// decision into it. Changes nothing here: the store may call it more than once, and only a committed change
    /// offers its push (``offer(_:)``).
    func decide(_ record: inout ActivityRecord, device: Device, now: Date) -> PreparedActivityPush? {
        guard record.hasUnpushedChange, record.inFlightNotification == nil else { return nil }
        if let lease = record.lease, lease.expiresAt > now {
            let key = ActivityKey(deviceID: record.deviceID, slug: record.slug)
            let waiting = entries.withLock { entries in
                if case .waiting? = entries[key] { return true }
                return false
            }
            guard lease.owner == decider.owner, waiting else { return nil }
        }
        return decider.decide(&record, device: device, earlierPending: false, now: now)
    }

    /// Hands a committed change's push to the dispatcher; `false` when the dispatcher is already sending an earlier
    /// push of the activity (that push's outcome finds the newer change due and it is pushed after it).
    func offer(_ decided: Decided) -> Bool {
        let taken = entries.withLock { entries -> Bool in
            if case .sending? = entries[decided.key] { return false }
            entries[decided.key] = .waiting(decided.push, decided.device)
            return true
        }
        if taken { wakeDispatcher() }
        return taken
    }

    /// The pushes waiting, each marked as being sent until ``sent(_:)``.
    func takeWaiting() -> [Decided] {
        entries.withLock { entries in
            var taken: [Decided] = []
            for (key, entry) in entries {
                guard case .waiting(let push, let device) = entry else { continue }
                taken.append(Decided(key: key, push: push, device: device))
                entries[key] = .sending
            }
            return taken
        }
    }

    /// The dispatcher wrote the outcome of the push of `key` (or gave its lease back).
    func sent(_ key: ActivityKey) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }
}
