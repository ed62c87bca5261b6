import Foundation

/// Reading a file an option names (a key, a service account, a CA bundle), with the reason in an operator's words.
public enum ConfigurationFile {
    /// Why the file could not be read, e.g. `cannot read /x.p8: No such file`.
    public struct Unreadable: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The file's bytes.
    public static func read(_ path: String) throws(Unreadable) -> Data {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw Unreadable(description: "cannot read \(path): No such file")
        }
        guard !isDirectory.boolValue else { throw Unreadable(description: "cannot read \(path): Is a directory") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw Unreadable(description: "cannot read \(path): Permission denied")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw Unreadable(description: "cannot read \(path): \(error.localizedDescription)")
        }
    }
}
