import Foundation
import HeraldCore
import Logging

/// Opens the store a database URL names.
public enum StoreFactory {
    /// `sqlite:PATH` (also `sqlite://PATH`) or a plain path → ``SQLiteStore``; `postgres://…` or `postgresql://…` →
    /// ``PostgresStore`` (see ``PostgresURL``); `memory:` → ``InMemoryStore``. The schema is brought up to date.
    /// `timeout`: how long one PostgreSQL call may take (``PostgresStore/callTimeout``).
    public static func open(
        _ url: String, maximumBytes: Int? = nil, timeout: Duration? = nil, logger: Logger = Logger(label: "herald.store")
    ) async throws -> any HeraldStore {
        if url == "memory:" { return InMemoryStore() }
        if PostgresURL.isPostgres(url) { return try await PostgresStore(url: url, callTimeout: timeout, logger: logger) }
        var path = url
        if path.hasPrefix("sqlite:") {
            path.removeFirst("sqlite:".count)
            if path.hasPrefix("//") { path.removeFirst(2) }
        }
        guard !path.isEmpty else { throw StoreError.unsupportedURL("sqlite: needs a file path") }
        return try SQLiteStore(path: path, maximumBytes: maximumBytes, logger: logger)
    }

    /// `url` as messages and logs may show it: a PostgreSQL URL's password hidden.
    public static func displayed(_ url: String) -> String {
        PostgresURL.isPostgres(url) ? PostgresURL.redacted(url) : url
    }
}
