import Foundation

/// What bounded storage asks of a store (issue 39, section 7): deleting finished notifications once they are old,
/// removing idle devices, and giving freed space back.
///
/// Each backend deletes "what goes with a notification" in one place (`SQLiteStore.deleteNotifications`,
/// `PostgresStore.deleteNotifications`, `InMemoryStore.removeNotification`): tables keyed by a notification (answers,
/// events, receipts) add their deletion there.
public protocol RetentionStore: Sendable {
    /// Deletes at most `limit` finished notifications (delivered, failed or expired) last changed before `cutoff`,
    /// oldest first, with everything that goes with them. A pending notification is never deleted, however old.
    /// Returns how many were deleted.
    func deleteFinishedNotifications(before cutoff: Date, limit: Int) async throws -> Int
    /// Deletes at most `limit` scheduled sends that are finished (`sent`, `failed`) and last changed before
    /// `finishedBefore`, or `canceled` before `canceledBefore`; returns how many.
    func deleteFinishedScheduledSends(finishedBefore: Date, canceledBefore: Date, limit: Int) async throws -> Int
    /// Deletes at most `limit` receipts (repeats until acknowledged) that ended before `cutoff`; returns how many
    /// (``ReceiptStore/deleteEndedReceipts(before:limit:)``: never an active one; PostgreSQL drops them by day).
    func deleteEndedReceipts(before cutoff: Date, limit: Int) async throws -> Int
    /// Gives free space back to the file system where the backend holds on to it (SQLite: an incremental vacuum of
    /// the free pages beyond a reserve of a tenth of the file); nothing where the backend does that itself.
    func reclaimSpace() async throws
    /// The devices were heard from at `date` (an authenticated request or a WebSocket client of theirs).
    func markDevicesSeen(_ ids: [Device.ID], at date: Date) async throws
    /// How many devices are idle since `cutoff`, counted up to `limit`: not registered (created or updated), sent to
    /// (a daily counter of `cutoff`'s UTC day or later) or heard from since then.
    func idleDeviceCount(since cutoff: Date, limit: Int) async throws -> Int
    /// Deletes at most `limit` devices idle since `cutoff` (as ``idleDeviceCount(since:limit:)`` counts them) with
    /// everything they own (notifications, counters, tokens, activities); returns their ids.
    func deleteIdleDevices(since cutoff: Date, limit: Int) async throws -> [Device.ID]
}
