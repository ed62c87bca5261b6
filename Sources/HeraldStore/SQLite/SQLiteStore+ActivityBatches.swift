import Foundation
import GRDB
import HeraldCore
import Synchronization

/// What a change of one activity reads: its neighbourhood (``ActivityNeighbourhood``: the row, the device's other
/// ongoing activities and the count), or its own row only (the dispatcher's pushes).
struct ActivityRead: Sendable, Equatable {
    enum Reach: Sendable, Equatable {
        case record
        case neighbourhood
    }

    var deviceID: Device.ID
    var slug: String
    var reach: Reach
}

/// One change's write in a batch of writes.
struct ActivityWrite: Sendable {
    enum Kind: Sendable {
        /// An optimistic change: `writes`, made only if what the read reads is still `seen`.
        case checked(seen: ActivityNeighbourhood, writes: ActivityWrites)
        /// A cheap change decided in the transaction, on the row as it is there.
        case decided(@Sendable (ActivityRecord?) throws -> ActivityWrites)
    }

    var read: ActivityRead
    var kind: Kind
}

/// What a change decided in the writer returned to its caller.
final class DecidedResult<Value: Sendable>: Sendable {
    let value = Mutex<Value?>(nil)
}

/// Activity reads and writes of concurrent changes (requests and the dispatcher) come in batches, on the writer's
/// connection: the reads of a batch in one visit to the writer without a transaction, the writes of a batch in one
/// transaction (one commit, one fsync), each write in a savepoint of its own so that one that fails leaves the others.
/// A reader connection would find the file changed at every read under load and drop its page cache (as the device
/// lookups found, docs/performance.md "Device lookups on the writer's connection"), and a change's three visits to
/// the writer (read, write, and the dispatcher's two more) each cost a thread switch and a commit of their own
/// (docs/performance.md, "Issue 38: activity changes in batches").
extension SQLiteStore {
    static func activityReadBatches(_ database: DatabasePool, rows: ActivityRowCache) -> Batcher<ActivityRead, ActivityNeighbourhood> {
        Batcher(maximumBatch: 256) { reads in
            do {
                return try await database.writeWithoutTransaction { db in
                    reads.map { read in
                        Result {
                            let found = try neighbourhood(read, db)
                            if let record = found.record { rows.remember(record) } else { rows.forget(deviceID: read.deviceID, slug: read.slug) }
                            return found
                        }
                    }
                }
            } catch {
                return reads.map { _ in .failure(error) }
            }
        }
    }

    /// The batches of writes, committed through `commit` (``SQLiteStore/write(_:)``'s rules: counted, the disk's
    /// failures remembered).
    static func activityWriteBatches(
        rows: ActivityRowCache,
        commit: @escaping @Sendable (@escaping @Sendable (GRDB.Database) throws -> [Result<Bool, any Error>]) async throws -> [Result<Bool, any Error>]
    ) -> Batcher<ActivityWrite, Bool> {
        Batcher(maximumBatch: 128) { batch in
            do {
                return try await commit { db in batch.map { write in Result { try written(write, rows: rows, db) } } }
            } catch {
                rows.forgetAll()  // what the failed transaction wrote may be in the cache
                return batch.map { _ in .failure(error) }
            }
        }
    }

    /// Writes one change in a savepoint: an optimistic one if its neighbourhood is unchanged, a decided one after
    /// deciding it; whether it wrote. The changed row goes into the row cache as a read would return it
    /// (``ActivityRecord/asReadBack``); the other rows it wrote are forgotten there.
    private static func written(_ write: ActivityWrite, rows: ActivityRowCache, _ db: GRDB.Database) throws -> Bool {
        var written = false
        let (deviceID, slug) = (write.read.deviceID, write.read.slug)
        try db.inSavepoint {
            let writes: ActivityWrites
            switch write.kind {
            case .checked(let seen, let checked):
                guard try neighbourhood(write.read, db) == seen else {
                    rows.forget(deviceID: deviceID, slug: slug)
                    return .commit
                }
                writes = checked
            case .decided(let decide):
                writes = try decide(try neighbourhood(write.read, db).record)
            }
            try apply(writes, deviceID: deviceID, db)
            for other in writes.deletions + writes.upserts.map(\.slug) where other != slug { rows.forget(deviceID: deviceID, slug: other) }
            // `apply` writes the deletions, then the upserts: the last upsert of the slug is the row now.
            if let row = writes.upserts.last(where: { $0.slug == slug && $0.deviceID == deviceID }), row.extrasRead {
                rows.remember(row.asReadBack)
            } else {
                rows.forget(deviceID: deviceID, slug: slug)
            }
            written = true
            return .commit
        }
        return written
    }

    /// The activity's row and, for ``ActivityRead/Reach/neighbourhood``, the device's other ongoing activities and
    /// its count; a missing device is an error then (the row alone is `nil` for it).
    static func neighbourhood(_ read: ActivityRead, _ db: GRDB.Database) throws -> ActivityNeighbourhood {
        let device = read.deviceID.databaseString
        let record = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(activityColumns) FROM activity WHERE device_id = ? AND slug = ?"), arguments: [device, read.slug]
        ).map { try activity($0) }
        guard read.reach == .neighbourhood else { return ActivityNeighbourhood(record: record, activityCount: 0) }
        // A row of the device means the device is there (its rows go with it).
        if record == nil, try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM device WHERE id = ?"), arguments: [device]) == nil {
            throw StoreError.notFound("device")
        }
        let ongoing = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT \(columnsWithoutExtras) FROM activity WHERE device_id = ? AND state = ? AND slug != ? ORDER BY slug"),
            arguments: [device, ActivityRecord.ongoingState, read.slug]
        ).map { try activity($0) }
        let count = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM activity WHERE device_id = ? AND state != ?"),
            arguments: [device, ActivityRecord.tombstoneState])
        return ActivityNeighbourhood(record: record, otherOngoing: ongoing, activityCount: count ?? 0)
    }

    static func apply(_ writes: ActivityWrites, deviceID: Device.ID, _ db: GRDB.Database) throws {
        for slug in writes.deletions {
            try db.cachedStatement(sql: "DELETE FROM activity WHERE device_id = ? AND slug = ?")
                .execute(arguments: [deviceID.databaseString, slug])
        }
        for record in writes.upserts where record.deviceID == deviceID {
            try db.cachedStatement(sql: upsertSQL).execute(arguments: arguments(record))
        }
    }

    /// A row of ``activityColumns`` (or ``columnsWithoutExtras``) starting at column `offset`, decoded by position, as a
    /// record; whatever a column holds (a type SQLite let in, a NULL), a bad value is an error, never a trap (GRDB's
    /// subscripts trap on a value they cannot convert, and on an index past the row; its `decode` throws).
    static func activity(_ row: Row, from offset: Int = 0) throws -> ActivityRecord {
        guard offset >= 0, row.count >= offset + 19 else { throw CorruptActivityRow(detail: "\(row.count) columns") }
        let columns = ActivityColumns(row: row, offset: offset)
        guard let deviceID = UUID(uuidString: try columns.string(0)) else { throw CorruptActivityRow(detail: "bad device id") }
        let leaseOwner = try columns.optionalString(16)
        let leaseExpiry = try columns.date(17)
        let hasExtras = row.count > offset + 19
        return ActivityRecord(
            deviceID: deviceID, slug: try columns.string(1), state: try columns.string(2), priority: try columns.int(3),
            createdAt: try columns.date(4) ?? .distantPast, updatedAt: try columns.date(5) ?? .distantPast, document: try columns.data(6),
            extras: hasExtras ? try columns.optionalData(19) : nil, extrasRead: hasExtras, nextDueAt: try columns.date(7),
            version: try columns.int(8), pushedVersion: try columns.int(9), pendingPush: try columns.optionalData(10),
            pushDueAt: try columns.date(11), pushedState: try columns.optionalString(12), pushedTimestamp: try columns.optionalInt(13),
            pushedEvent: try columns.optionalString(18).flatMap(LiveActivityMessage.Event.init(rawValue:)),
            inFlightNotification: try columns.optionalString(14).flatMap(UUID.init(uuidString:)),
            updateToken: try columns.optionalString(15), lease: leaseOwner.map { Lease(owner: $0, expiresAt: leaseExpiry ?? .distantPast) })
    }
}

extension ActivityRecord {
    /// The record as a read of the row it was written to returns it: its dates through seconds since 1970, as the
    /// row keeps them (``SQLiteStore/arguments(_:)``), so that the row cache compares equal to the row.
    var asReadBack: ActivityRecord {
        func stored(_ date: Date) -> Date { Date(timeIntervalSince1970: date.timeIntervalSince1970) }
        var record = self
        record.createdAt = stored(createdAt)
        record.updatedAt = stored(updatedAt)
        record.nextDueAt = nextDueAt.map(stored)
        record.pushDueAt = pushDueAt.map(stored)
        record.lease = lease.map { Lease(owner: $0.owner, expiresAt: stored($0.expiresAt)) }
        return record
    }
}

/// The columns of an activity row by position, each read as one concrete type (no generic decoding: the profile of
/// scenario 9 found Swift's generic metadata lookups of a generic reader at 5 % of Herald's samples).
private struct ActivityColumns {
    let row: Row
    let offset: Int

    func string(_ index: Int) throws -> String { try row.decode(String.self, atIndex: offset + index) }
    func int(_ index: Int) throws -> Int { try row.decode(Int.self, atIndex: offset + index) }
    func data(_ index: Int) throws -> Data { try row.decode(Data.self, atIndex: offset + index) }

    func optionalString(_ index: Int) throws -> String? {
        row.hasNull(atIndex: offset + index) ? nil : try row.decode(String.self, atIndex: offset + index)
    }

    func optionalInt(_ index: Int) throws -> Int? {
        row.hasNull(atIndex: offset + index) ? nil : try row.decode(Int.self, atIndex: offset + index)
    }

    func optionalData(_ index: Int) throws -> Data? {
        row.hasNull(atIndex: offset + index) ? nil : try row.decode(Data.self, atIndex: offset + index)
    }

    /// Seconds since 1970 as a date.
    func date(_ index: Int) throws -> Date? {
        row.hasNull(atIndex: offset + index) ? nil : Date(timeIntervalSince1970: try row.decode(Double.self, atIndex: offset + index))
    }
}

private struct CorruptActivityRow: Error {
    var detail: String
}
