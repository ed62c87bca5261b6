import Foundation

/// Operator changes to a device's daily limit (`herald limits set|clear`), made directly in the store.
///
/// ```swift
/// try await DailyLimits.set(500, for: userID, in: store)    // this USER_ID may get 500 notifications a day
/// try await DailyLimits.set(nil, for: userID, in: store)    // back to HERALD_RATE_LIMIT_DAILY
/// ```
public enum DailyLimits {
    /// Sets (or, with `nil`, clears) the per-device override of `HERALD_RATE_LIMIT_DAILY` for `userID`.
    public static func set(
        _ limit: Int?, for userID: UserID, in store: any DeviceStore, at date: Date = Date()
    ) async throws(DailyLimitError) {
        if let limit, limit < 1 { throw .limitBelowOne }
        guard var device = try await StoreUnavailable.during(as: DailyLimitError.storeUnavailable, { try await store.device(userID: userID) })
        else { throw .unknownUser }
        device.dailyLimit = limit
        device.updatedAt = date
        let changed = device
        try await StoreUnavailable.during(as: DailyLimitError.storeUnavailable) { try await store.updateDevice(changed) }
    }
}
