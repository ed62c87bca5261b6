/// Runs a store call; any error it throws becomes a 503 `store_unavailable`.
func storeCall<Value>(_ call: () async throws -> Value) async throws -> Value {
    do {
        return try await call()
    } catch {
        throw APIError.storeUnavailable("\(error)")
    }
}
