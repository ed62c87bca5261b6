import HeraldCore

/// TEMPORARY until HeraldAPNs lands.
public enum APNsSetup {
    public static func check(_ settings: APNsSettings) throws -> [String] { throw ConfigurationError("not wired") }
}

/// One line for a startup failure.
public func startupMessage(_ error: any Error) -> String {
    if let error = error as? ConfigurationError { return error.description }
    return "\(error)"
}
