/// Errors of the store implementations.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    /// The record to update does not exist.
    case notFound(String)
    /// The database URL names a backend Herald does not have.
    case unsupportedURL(String)

    public var description: String {
        switch self {
        case .notFound(let what): "\(what) not found"
        case .unsupportedURL(let url): "unsupported database URL \(url)"
        }
    }
}
