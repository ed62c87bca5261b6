/// Small values the server keeps across restarts and shares between instances on one database: its generated keys
/// (the Web Push VAPID key). Names are fixed strings the server chooses (`webpush.vapid_private_key`).
///
/// ```swift
/// let kept = try await store.setting(named: "webpush.vapid_private_key", insertingIfAbsent: freshlyGenerated)
/// // `kept` is what the first instance stored; every instance on the database gets the same value.
/// ```
public protocol ServerSettingStore: Sendable {
    /// The value stored under `name`, storing `value` first when there is none: concurrent callers (several instances on
    /// one PostgreSQL database) all get the one value that was stored first.
    func setting(named name: String, insertingIfAbsent value: String) async throws -> String
    /// The value stored under `name`, if any.
    func setting(named name: String) async throws -> String?
}
