import Foundation

/// Fresh temporary directories for tests.
public enum TemporaryDirectory {
    /// Creates and returns a new empty directory under the system's temporary directory.
    public static func make() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
