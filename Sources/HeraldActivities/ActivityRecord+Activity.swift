import Foundation
import HeraldCore

/// How an ``Activity`` and its pending push live in an ``ActivityRecord``.
///
/// A DELETE of an ongoing activity leaves a tombstone (state ``tombstoneState``) until its end push is handed to
/// delivery; every read of the API treats a tombstone as absent.
extension ActivityRecord {
    public var isTombstone: Bool { state == Self.tombstoneState }

    /// The activity the document and the extras hold (without history and backlog when the extras were not read).
    public func decodedActivity() throws -> Activity {
        try Activity(storedDocument: document, extras: extras)
    }

    /// The push the unpushed changes ask for.
    var decodedPendingPush: ActivityPush? {
        pendingPush.flatMap(ActivityPush.init(storedJSON:))
    }

    /// A new row for `activity`, nothing pushed yet (version 0: ``recording(_:push:now:)`` counts the change).
    public static func new(_ activity: Activity, deviceID: Device.ID) throws -> ActivityRecord {
        let parts = try activity.storedParts()
        return ActivityRecord(
            deviceID: deviceID, slug: activity.slug, state: activity.state.rawValue, priority: activity.priority,
            createdAt: activity.createdAt, updatedAt: activity.updatedAt, document: Data(parts.document), extras: parts.extras.map { Data($0) },
            version: 0)
    }

    /// This row after an accepted change that left `activity`, and the push it asks for: the change and its "to push"
    /// mark in one write. A change without a push, with nothing else unpushed, is marked pushed at once. Throws when
    /// the activity cannot be encoded (the change is refused: nothing is written).
    public func recording(_ activity: Activity, push: ActivityPush?, now: Date) throws -> ActivityRecord {
        var record = self
        let hadUnpushedChange = record.hasUnpushedChange
        record.state = activity.state.rawValue
        record.priority = activity.priority
        record.updatedAt = activity.updatedAt
        if extrasRead {
            let parts = try activity.storedParts()
            record.document = Data(parts.document)
            record.extras = parts.extras.map { Data($0) }
        } else {
            // Extras not read (an eviction candidate): the stored ones are kept; a document from before the split
            // keeps what it holds.
            record.document = Data(try activity.storedJSON())
        }
        record.nextDueAt = ActivitySchedule.nextDue(of: activity)?.at
        record.version += 1
        if let push {
            record.pendingPush = try Self.coalesced(record.decodedPendingPush, push).storedJSON()
            record.pushDueAt = now
        } else if !hadUnpushedChange {
            record.pushedVersion = record.version
        }
        return record
    }

    /// The push for several changes not yet handed on: the newest, keeping the alert (and sound) of an earlier one
    /// when the newest has none. The event itself is decided when it is sent, from what the device was last sent.
    static func coalesced(_ earlier: ActivityPush?, _ newest: ActivityPush) -> ActivityPush {
        guard let earlier else { return newest }
        var push = newest
        if push.alert == nil, let alert = earlier.alert {
            push.alert = alert
            push.sound = push.sound ?? earlier.sound
        }
        push.isAlerting = newest.isAlerting || earlier.isAlerting
        return push
    }
}
