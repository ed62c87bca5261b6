import Foundation
import HeraldCore
import PostgresNIO

/// Receipts (issue 39, section 3: repeats until acknowledged) on PostgreSQL: due repeats claimed with
/// `FOR UPDATE SKIP LOCKED` and a lease, so that with several instances each repeat is sent by one, and a crashed
/// instance's are taken by another once its lease expires. Since migration 22 the table is partitioned by the day a
/// receipt was created on, and retention drops a day whole (PostgresReceiptPartitions.swift).
extension PostgresStore {
    /// The statements of migration 15 (migration 22 made the table partitioned, with the same columns and indexes).
    static let receiptSchema: [String] = [
        """
        CREATE TABLE notification_receipt (
            id uuid PRIMARY KEY,
            notification_id uuid,
            device_id uuid NOT NULL REFERENCES device (id) ON DELETE CASCADE,
            token_id uuid NOT NULL,
            collapse_id text NOT NULL,
            collapse_id_given boolean NOT NULL,
            tags text NOT NULL,
            content bytea NOT NULL,
            repeat_seconds bigint NOT NULL,
            expires_at double precision NOT NULL,
            next_repeat_at double precision NOT NULL,
            repeats_sent bigint NOT NULL,
            status text NOT NULL,
            action_id text,
            acknowledged_by_device uuid,
            cancel_reason text,
            created_at double precision NOT NULL,
            ended_at double precision,
            lease_owner text,
            lease_expires_at double precision
        )
        """,
        "CREATE INDEX notification_receipt_due ON notification_receipt (next_repeat_at) WHERE status = 'active'",
        "CREATE INDEX notification_receipt_device_active ON notification_receipt (device_id) WHERE status = 'active'",
        "CREATE INDEX notification_receipt_token_active ON notification_receipt (token_id, collapse_id) WHERE status = 'active'",
        "CREATE INDEX notification_receipt_ended ON notification_receipt (ended_at) WHERE status != 'active'",
    ]

    private static let receiptColumns = """
        id, notification_id, device_id, token_id, collapse_id, collapse_id_given, tags, content, repeat_seconds, expires_at,
        next_repeat_at, repeats_sent, status, action_id, acknowledged_by_device, cancel_reason, created_at, ended_at
        """

    private static func receipt(_ row: PostgresRow) throws -> Receipt {
        let row = row.makeRandomAccess()
        return Receipt(
            id: try row.value("id"), notificationID: try row.value("notification_id"), deviceID: try row.value("device_id"),
            tokenID: try row.value("token_id"), collapseID: try row.value("collapse_id"), collapseIDGiven: try row.value("collapse_id_given"),
            tags: ReceiptTags.tags(try row.value("tags")), content: try row.value("content"), repeatSeconds: try row.value("repeat_seconds"),
            expiresAt: try row.date("expires_at"), nextRepeatAt: try row.date("next_repeat_at"), repeatsSent: try row.value("repeats_sent"),
            status: try row.enumValue("status"), actionID: try row.value("action_id"),
            acknowledgedByDevice: try row.value("acknowledged_by_device"), cancelReason: try row.value("cancel_reason"),
            createdAt: try row.date("created_at"), endedAt: try row.optionalDate("ended_at"))
    }

    public func insertReceipt(_ receipt: Receipt, maximumActivePerDevice: Int) async throws -> Bool {
        let day = Self.partitionDay(of: receipt.createdAt.timeIntervalSince1970)
        if let day { try await ensureReceiptPartition(day: day) }
        do {
            return try await insertReceipt(receipt, maximumActivePerDevice: maximumActivePerDevice, makingDay: nil)
        } catch let error as PostgresStoreError where error.sqlState == "23514" && day != nil {
            // No partition for its day: another instance dropped it since. Made again in the insert's own transaction,
            // where no drop can come in between.
            let stored = try await insertReceipt(receipt, maximumActivePerDevice: maximumActivePerDevice, makingDay: day)
            if let day { receiptPartitionKnown(day: day) }
            return stored
        }
    }

    /// Inserts `receipt` in one transaction, first making the partition of `makingDay` if it is given.
    private func insertReceipt(_ receipt: Receipt, maximumActivePerDevice: Int, makingDay: Int?) async throws -> Bool {
        try await transaction { connection in
            if let makingDay { try await self.makeReceiptPartition(day: makingDay, on: connection) }
            // The device's row, locked: two instances sending to one device count one after the other.
            guard try await !self.execute("SELECT id FROM device WHERE id = \(receipt.deviceID) FOR UPDATE", on: connection).isEmpty else {
                throw StoreError.notFound("device")
            }
            let active = try await self.execute(
                """
                SELECT count(*) FROM notification_receipt WHERE device_id = \(receipt.deviceID) AND status = 'active'
                    AND NOT (\(receipt.collapseIDGiven) AND collapse_id_given AND token_id = \(receipt.tokenID)
                        AND collapse_id = \(receipt.collapseID))
                """, on: connection
            ).first?.decode(Int.self) ?? 0
            guard active < maximumActivePerDevice else { return false }
            try await self.execute(
                """
                INSERT INTO notification_receipt (\(unescaped: Self.receiptColumns)) VALUES (
                    \(receipt.id), \(receipt.notificationID), \(receipt.deviceID), \(receipt.tokenID), \(receipt.collapseID),
                    \(receipt.collapseIDGiven), \(ReceiptTags.text(receipt.tags)), \(receipt.content), \(receipt.repeatSeconds),
                    \(receipt.expiresAt.timeIntervalSince1970), \(receipt.nextRepeatAt.timeIntervalSince1970), \(receipt.repeatsSent),
                    \(receipt.status.rawValue), \(receipt.actionID), \(receipt.acknowledgedByDevice), \(receipt.cancelReason),
                    \(receipt.createdAt.timeIntervalSince1970), \(receipt.endedAt?.timeIntervalSince1970))
                """, on: connection)
            return true
        }
    }

    public func activateReceipt(id: Receipt.ID, notificationID: PushNotification.ID, at date: Date) async throws -> [Receipt] {
        try await transaction { connection in
            guard
                let receipt = try await self.execute(
                    "UPDATE notification_receipt SET notification_id = \(notificationID) WHERE id = \(id) RETURNING \(unescaped: Self.receiptColumns)",
                    on: connection
                ).first.map(Self.receipt), receipt.collapseIDGiven
            else { return [] }
            return try await self.execute(
                """
                UPDATE notification_receipt SET status = 'replaced', ended_at = \(date.timeIntervalSince1970), lease_owner = NULL,
                    lease_expires_at = NULL
                WHERE token_id = \(receipt.tokenID) AND collapse_id = \(receipt.collapseID) AND collapse_id_given AND status = 'active'
                    AND id != \(id)
                RETURNING \(unescaped: Self.receiptColumns)
                """, on: connection
            ).map(Self.receipt)
        }
    }

    public func deleteReceipt(id: Receipt.ID) async throws {
        try await write("DELETE FROM notification_receipt WHERE id = \(id)")
    }

    public func receipt(id: Receipt.ID) async throws -> Receipt? {
        try await read("SELECT \(unescaped: Self.receiptColumns) FROM notification_receipt WHERE id = \(id)").first.map(Self.receipt)
    }

    public func receipts(ids: [Receipt.ID]) async throws -> [Receipt.ID: Receipt] {
        guard !ids.isEmpty else { return [:] }
        let rows = try await read("SELECT \(unescaped: Self.receiptColumns) FROM notification_receipt WHERE id = ANY(\(ids))")
        return Dictionary(try rows.map(Self.receipt).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func activeReceipts(tokenID: UUID) async throws -> [Receipt] {
        try await read(
            """
            SELECT \(unescaped: Self.receiptColumns) FROM notification_receipt WHERE token_id = \(tokenID) AND status = 'active'
            ORDER BY created_at, id
            """
        ).map(Self.receipt)
    }

    public func endReceipt(id: Receipt.ID, _ ending: ReceiptEnding, at date: Date) async throws -> Receipt? {
        var actionID: String?
        var device: UUID?
        var reason: String?
        switch ending {
        case .acknowledged(let action, let by): (actionID, device) = (action, by)
        case .canceled(let why): reason = why
        case .expired: break
        }
        return try await write(
            """
            UPDATE notification_receipt SET status = \(ending.status.rawValue), ended_at = \(date.timeIntervalSince1970),
                action_id = \(actionID), acknowledged_by_device = \(device), cancel_reason = \(reason), lease_owner = NULL,
                lease_expires_at = NULL
            WHERE id = \(id) AND status = 'active'
            RETURNING \(unescaped: Self.receiptColumns)
            """
        ).first.map(Self.receipt)
    }

    public func claimDueReceipts(at now: Date, lease: Lease, limit: Int) async throws -> [Receipt] {
        let seconds = now.timeIntervalSince1970
        let unsent = seconds - ReceiptRules.unsentGrace
        // Read first: nothing is written while nothing is due (every instance asks every second).
        let due = try await read("SELECT EXISTS (SELECT 1 FROM notification_receipt WHERE status = 'active' AND next_repeat_at <= \(seconds))")
        guard try due.first?.decode(Bool.self) == true else { return [] }
        return try await write(
            """
            UPDATE notification_receipt SET lease_owner = \(lease.owner), lease_expires_at = \(lease.expiresAt.timeIntervalSince1970)
            WHERE (id, created_at) IN (
                SELECT id, created_at FROM notification_receipt
                WHERE status = 'active' AND next_repeat_at <= \(seconds) AND (lease_owner IS NULL OR lease_expires_at <= \(seconds))
                    AND (notification_id IS NOT NULL OR created_at <= \(unsent))
                ORDER BY next_repeat_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.receiptColumns)
            """
        ).map(Self.receipt).sorted { $0.nextRepeatAt < $1.nextRepeatAt }
    }

    public func completeReceiptRepeat(_ receipt: Receipt, owner: String) async throws -> Bool {
        // Its creation time, within a millisecond (a `Date` made from the stored seconds may give back the last bit
        // otherwise), narrows the statement to its day's partition.
        let created = receipt.createdAt.timeIntervalSince1970
        return try await !write(
            """
            UPDATE notification_receipt SET repeats_sent = \(receipt.repeatsSent),
                next_repeat_at = \(receipt.nextRepeatAt.timeIntervalSince1970), lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(receipt.id) AND created_at BETWEEN \(created - 0.001) AND \(created + 0.001) AND lease_owner = \(owner)
                AND status = 'active'
            RETURNING id
            """
        ).isEmpty
    }

    /// Drops the days whose receipts all ended before `cutoff` (ended before it themselves), then deletes up to `limit`
    /// ended receipts of the days that hold an active one, as rows (PostgresReceiptPartitions.swift: the rule). An
    /// active receipt is never deleted, however old. A busy table: nothing more this pass, the next one tries again.
    public func deleteEndedReceipts(before cutoff: Date, limit: Int) async throws -> Int {
        let seconds = cutoff.timeIntervalSince1970
        let days = try await dropEndedReceiptDays(before: seconds)
        guard !days.busy, !days.active.isEmpty else { return days.dropped }
        return days.dropped + (try await deleteEndedReceiptRows(ofDays: days.active, before: seconds, limit: limit))
    }
}
