/// Errors of the store implementations.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The record to update does not exist.
    case notFound(String)
    /// The database URL names a backend Herald does not have.
    case unsupportedURL(String)
    /// The database URL names a backend Herald has, but cannot be read (it never includes the password).
    case invalidURL(String)
    /// The database could not be reached or opened.
    case unavailable(String)
    /// The database's schema was written by a newer Herald than this one.
    case schemaTooNew(found: Int, known: Int)

    public var description: String {
        switch self {
        case .notFound(let what): "\(what) not found"
        case .unsupportedURL(let url): "unsupported database URL \(url)"
        case .invalidURL(let reason): "invalid database URL: \(reason)"
        case .unavailable(let reason): "database unavailable: \(reason)"
        case .schemaTooNew(let found, let known):
            "the database schema is at version \(found), newer than this Herald knows (\(known)): run a newer Herald"
        }
    }
}
