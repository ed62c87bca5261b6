import HeraldCore

extension InMemoryStore {
    public func setting(named name: String, insertingIfAbsent value: String) async throws -> String {
        if let stored = settings[name] { return stored }
        settings[name] = value
        return value
    }

    public func setting(named name: String) async throws -> String? {
        settings[name]
    }
}
