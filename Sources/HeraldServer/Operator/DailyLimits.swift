import Foundation
import HeraldCore

/// Operator changes to a device's daily limit (`herald limits set|clear`), made directly in the store.
public enum DailyLimits {
    /// Sets (or, with `nil`, clears) the per-device override of `HERALD_RATE_LIMIT_DAILY` for a USER_ID.
    /// Returns a line describing what was done.
    public static func set(_ limit: Int?, forUserID userID: String, in store: any HeraldStore, at date: Date = Date()) async throws -> String {
        guard UserIDRule.accepts(userID) else { throw ConfigurationError("USER_ID must be 64 hexadecimal characters") }
        if let limit, limit < 1 { throw ConfigurationError("the limit must be at least 1") }
        guard var device = try await store.device(userIDHash: Secrets.hash(userID.lowercased())) else {
            throw ConfigurationError("no device is registered under this USER_ID")
        }
        device.dailyLimit = limit
        device.updatedAt = date
        try await store.updateDevice(device)
        return limit.map { "Daily limit of this USER_ID set to \($0)." } ?? "Daily limit of this USER_ID reset to the default."
    }
}
