import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One wrk process, started with `posix_spawn` rather than Foundation's `Process`, for two reasons:
/// - signals: the threads of this process block most signals (NIO, Dispatch), and a child inherits the mask of the
///   thread that spawns it; wrk ends its run early only on SIGINT, so it is spawned with an empty mask and SIGINT at
///   its default disposition;
/// - CPU time: once it has exited and before it is reaped, `/proc/PID/stat` holds the user and system time of all its
///   threads, the load generator's CPU figure. (Not `wait4`'s `rusage`: whether this module may name the fields of
///   its `timeval`s depends on which C module the build happened to attribute `timeval` to, `MemberImportVisibility`.)
///
/// Standard output and standard error go to one pipe, read until EOF on a thread of its own. No other descriptor of
/// this process reaches wrk (its event loops only take descriptors below 10 + 3 × connections, and with one connection
/// per thread in a paced load the descriptors of this process would push some connections' sockets past that).
final class WrkProcess: Sendable {
    struct Exit: Sendable {
        var output: String
        /// The wait status (`WEXITSTATUS` when it exited normally).
        var status: Int32
        /// User + system CPU of the whole process, seconds.
        var cpuSeconds: Double
    }

    let pid: pid_t
    private let outputDescriptor: Int32
    /// Set once the process has exited and before it is reaped, so that no signal goes to a reused pid.
    private let hasExited = Mutex(false)

    /// Starts `executable arguments…` with this process's environment and standard input from /dev/null.
    init(executable: URL, arguments: [String]) throws {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { throw Wrk.Failure(description: "pipe failed: errno \(errno)") }
        // Neither end may leak into other children (wrk gets the write end through dup2, which clears the flag).
        for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, descriptors[1], 1)
        posix_spawn_file_actions_adddup2(&actions, descriptors[1], 2)
        // Every other descriptor of this process (glibc ignores one that was closed meanwhile).
        let descriptorNames = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in descriptorNames.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        close(descriptors[1])
        guard result == 0 else {
            close(descriptors[0])
            throw Wrk.Failure(description: "could not start \(executable.path): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        outputDescriptor = descriptors[0]
    }

    /// Sends `signal` unless the process has already exited.
    func signal(_ signal: Int32) {
        hasExited.withLock { exited in
            if !exited { _ = kill(pid, signal) }
        }
    }

    /// Reads the output until EOF, waits for the process to exit and reaps it (on a thread of its own, so that no
    /// cooperative thread blocks).
    func waitForExit() async -> Exit {
        await withCheckedContinuation { (continuation: CheckedContinuation<Exit, Never>) in
            Thread.detachNewThread { [self] in
                var output: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(outputDescriptor, $0.baseAddress, $0.count) }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    output += buffer[0..<count]
                }
                close(outputDescriptor)
                // Wait without reaping, read its CPU time, mark it exited, then reap it.
                var info = siginfo_t()
                while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
                let cpu = ProcessStats.cpuSeconds(of: pid) ?? 0
                hasExited.withLock { $0 = true }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                let exitStatus = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                continuation.resume(
                    returning: Exit(output: String(decoding: output, as: UTF8.self), status: exitStatus, cpuSeconds: cpu))
            }
        }
    }
}
