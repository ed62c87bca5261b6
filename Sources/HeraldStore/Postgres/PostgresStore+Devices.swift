import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    public func insertDevice(_ device: Device) async throws {
        try await write(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO device (id, user_id_hash, secret_hash, platform, environment, token, is_active,
                        inactive_reason, daily_limit, created_at, updated_at, address_data, push_to_start_token)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                    """, binds: try Self.bindings(device)))
        devices.invalidate(id: device.id)
        await presence.devicesChanged([device.id])
    }

    public func updateDevice(_ device: Device) async throws {
        let updated = try await write(
            PostgresQuery(
                unsafeSQL: """
                    UPDATE device SET user_id_hash = $2, secret_hash = $3, platform = $4, environment = $5, token = $6,
                        is_active = $7, inactive_reason = $8, daily_limit = $9, created_at = $10, updated_at = $11,
                        address_data = $12, push_to_start_token = $13
                    WHERE id = $1
                    RETURNING id
                    """, binds: try Self.bindings(device)))
        devices.invalidate(id: device.id)
        await presence.devicesChanged([device.id])
        if updated.isEmpty { throw StoreError.notFound("device") }
    }

    /// Kept by a trigger in `device_count`: one row read, whatever the number of devices.
    public func deviceCount() async throws -> Int {
        try await read("SELECT count FROM device_count WHERE id = 1").first?.decode(Int.self) ?? 0
    }

    public func activeTokens(platform: Platform) async throws -> [Device.ID: String] {
        let rows = try await read(
            "SELECT id, token FROM device WHERE platform = \(platform.rawValue) AND is_active AND token IS NOT NULL")
        return try rows.reduce(into: [:]) { tokens, row in
            let (id, token) = try row.decode((UUID, String).self)
            tokens[id] = token
        }
    }

    public func device(userIDHash: String) async throws -> Device? {
        if let cached = devices.device(userIDHash: userIDHash) { return cached }
        return try await lookUpDevice(.userIDHash(userIDHash))
    }

    public func device(id: Device.ID) async throws -> Device? {
        if let cached = devices.device(id: id) { return cached }
        return try await lookUpDevice(.id(id))
    }

    public func deleteDevice(id: Device.ID) async throws {
        try await write("DELETE FROM device WHERE id = \(id)")
        devices.invalidate(id: id)
        await presence.devicesChanged([id])
    }

    public func deactivateDevice(id: Device.ID, token: String, reason: String, at date: Date) async throws {
        let deactivated = try await write(Self.deactivation(token: token, usedFor: id, reason: reason, at: date))
        let ids = try deactivated.map { try $0.decode(UUID.self) }
        for id in ids { devices.invalidate(id: id) }
        await presence.devicesChanged(ids)
    }

    /// Deactivates every device of `deviceID`'s platform bound to the dead `token`; returns their ids.
    static func deactivation(token: String, usedFor deviceID: Device.ID, reason: String, at date: Date) -> PostgresQuery {
        """
        UPDATE device SET is_active = false, inactive_reason = \(reason), updated_at = \(date.timeIntervalSince1970)
        WHERE token = \(token) AND platform = (SELECT platform FROM device WHERE id = \(deviceID))
        RETURNING id
        """
    }

    // MARK: Rows

    static let deviceColumns = """
        id, user_id_hash, secret_hash, platform, environment, token, is_active, inactive_reason, daily_limit, created_at,
        updated_at, address_data, push_to_start_token
        """

    static func device(_ row: PostgresRow) throws -> Device {
        let row = row.makeRandomAccess()
        return Device(
            id: try row.value("id"), userIDHash: try row.value("user_id_hash"), secretHash: try row.value("secret_hash"),
            platform: try row.enumValue("platform"), environment: try row.enumValue("environment"), token: try row.value("token"),
            isActive: try row.value("is_active"), inactiveReason: try row.value("inactive_reason"),
            dailyLimit: try row.value("daily_limit"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            pushToStartToken: try row.value("push_to_start_token"), addressData: try row.value("address_data"))
    }

    /// `$1` to `$13`, in the order of ``deviceColumns``.
    private static func bindings(_ device: Device) throws -> PostgresBindings {
        try PostgresBindings(binding: [
            device.id, device.userIDHash, device.secretHash, device.platform.rawValue, device.environment.rawValue, device.token,
            device.isActive, device.inactiveReason, device.dailyLimit, device.createdAt.timeIntervalSince1970,
            device.updatedAt.timeIntervalSince1970, device.addressData, device.pushToStartToken,
        ])
    }
}
