import Foundation
import HeraldCore
import Logging

/// Opens the store a database URL names.
public enum StoreFactory {
    /// `sqlite:PATH` (also `sqlite://PATH`) or a plain path → ``SQLiteStore``; `memory:` → ``InMemoryStore``.
    public static func open(
        _ url: String, maximumBytes: Int? = nil, logger: Logger = Logger(label: "herald.store")
    ) throws -> any HeraldStore {
        if url == "memory:" { return InMemoryStore() }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            throw StoreError.unsupportedURL("\(url.prefix(while: { $0 != ":" })): PostgreSQL is not supported yet")
        }
        var path = url
        if path.hasPrefix("sqlite:") {
            path.removeFirst("sqlite:".count)
            if path.hasPrefix("//") { path.removeFirst(2) }
        }
        guard !path.isEmpty else { throw StoreError.unsupportedURL("sqlite: needs a file path") }
        return try SQLiteStore(path: path, maximumBytes: maximumBytes, logger: logger)
    }
}
