import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fresh temporary directories for tests, removed when the test process exits.
///
/// Every directory is made inside one folder of this process, `herald-tests-<pid>` under the system's temporary
/// directory, and that folder is removed at exit (`atexit`). A test process that was killed cannot remove its own:
/// the first directory a later process makes removes the folders of processes that no longer exist.
public enum TemporaryDirectory {
    /// Creates and returns a new empty directory.
    public static func make() throws -> URL {
        let url = processFolder.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private static let prefix = "herald-tests-"

    /// This process's folder, made (and its removal at exit arranged) on first use.
    private static let processFolder: URL = {
        removeFoldersOfEndedProcesses()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(prefix + String(getpid()))
        atexit { try? FileManager.default.removeItem(at: TemporaryDirectory.processFolder) }
        return folder
    }()

    /// Removes `herald-tests-<pid>` folders whose process has ended (killed before its exit handler ran).
    private static func removeFoldersOfEndedProcesses() {
        let fileManager = FileManager.default
        let parent = fileManager.temporaryDirectory
        guard let names = try? fileManager.contentsOfDirectory(atPath: parent.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH {
                try? fileManager.removeItem(at: parent.appendingPathComponent(name))
            }
        }
    }
}
