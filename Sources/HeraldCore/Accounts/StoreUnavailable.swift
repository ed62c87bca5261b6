/// A store call of a domain service failed or did not answer in time. ``cause`` says why, for the log: the answer to a
/// client says only that the store is not available.
///
/// ```swift
/// let count = try await StoreUnavailable.during(as: RegistrationError.storeUnavailable) { try await store.deviceCount() }
/// ```
public struct StoreUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store's error, as text.
    public var cause: String

    public init(cause: String) {
        self.cause = cause
    }

    public var description: String { "the store is not available: \(cause)" }

    /// Runs `call`; any error it throws becomes a ``StoreUnavailable`` that keeps it as its ``cause``, wrapped by `wrap`
    /// into the service's own error.
    public static func during<Value, Failure: Error>(
        as wrap: (StoreUnavailable) -> Failure, _ call: () async throws -> Value
    ) async throws(Failure) -> Value {
        do {
            return try await call()
        } catch {
            throw wrap(StoreUnavailable(cause: "\(error)"))
        }
    }
}
