/// Runs a store call; any error it throws becomes a 503 `store_unavailable` that keeps the error as its cause, which
/// ``JSONErrorMiddleware`` logs when the answer goes out.
func storeCall<Value>(_ call: () async throws -> Value) async throws -> Value {
    do {
        return try await call()
    } catch {
        throw APIError.storeUnavailable("\(error)")
    }
}
