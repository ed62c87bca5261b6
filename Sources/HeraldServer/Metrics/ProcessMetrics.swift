#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process metrics Prometheus' client libraries export under standard names, read at each scrape: on Linux from
/// `/proc/self` (as client_golang does), elsewhere only the CPU time (getrusage).
struct ProcessMetrics: Equatable {
    /// User and system CPU time, in seconds.
    var cpuSeconds: Double?
    var residentMemoryBytes: Double?
    var virtualMemoryBytes: Double?
    /// Seconds since 1970 when the process started.
    var startTimeSeconds: Double?
    var openFileDescriptors: Double?
    /// The soft open-file limit.
    var maximumFileDescriptors: Double?

    /// The names, help texts and types this type emits (docs and tests list them).
    static let descriptions: [(name: String, type: String, help: String)] = [
        ("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds."),
        ("process_resident_memory_bytes", "gauge", "Resident memory size in bytes."),
        ("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes."),
        ("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds."),
        ("process_open_fds", "gauge", "Number of open file descriptors."),
        ("process_max_fds", "gauge", "Maximum number of open file descriptors."),
    ]

    /// The values now.
    static func current() -> ProcessMetrics {
        var metrics = ProcessMetrics()
        var limit = rlimit()
        if getrlimit(resourceOpenFiles, &limit) == 0, limit.rlim_cur < rlim_t(Int64.max) {  // not unlimited
            metrics.maximumFileDescriptors = Double(limit.rlim_cur)
        }
        #if os(Linux)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let stat = readText("/proc/self/stat"), let fields = statFields(stat), fields.count > 21, ticks > 0 {
            // proc(5): fields 14, 15 (utime, stime), 22 (starttime, ticks after boot), 23 (vsize), 24 (rss, pages);
            // `fields` starts at field 3.
            if let user = Double(fields[11]), let system = Double(fields[12]) { metrics.cpuSeconds = (user + system) / ticks }
            if let virtual = Double(fields[20]) { metrics.virtualMemoryBytes = virtual }
            if let pages = Double(fields[21]) { metrics.residentMemoryBytes = pages * pageSize }
            if let started = Double(fields[19]), let boot = bootTime() { metrics.startTimeSeconds = boot + started / ticks }
        }
        metrics.openFileDescriptors = openFileDescriptorCount()
        #else
        var usage = rusage()
        if getrusage(RUSAGE_SELF, &usage) == 0 {
            metrics.cpuSeconds =
                Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
                + Double(usage.ru_stime.tv_usec) / 1e6
        }
        #endif
        return metrics
    }

    /// The exposition text (`# HELP`, `# TYPE`, the sample) of every value that could be read.
    func emit(into buffer: inout [UInt8]) {
        let values = [
            cpuSeconds, residentMemoryBytes, virtualMemoryBytes, startTimeSeconds, openFileDescriptors, maximumFileDescriptors,
        ]
        for (description, value) in zip(Self.descriptions, values) {
            guard let value else { continue }
            buffer.append(contentsOf: Array("""
                # HELP \(description.name) \(description.help)
                # TYPE \(description.name) \(description.type)
                \(description.name) \(value)

                """.utf8))
        }
    }

    #if canImport(Glibc)
    private static let resourceOpenFiles = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceOpenFiles = RLIMIT_NOFILE
    #endif

    #if os(Linux)
    /// The fields of `/proc/self/stat` after the command name (which may hold spaces and parentheses).
    private static func statFields(_ stat: String) -> [Substring]? {
        guard let end = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: end)...].split(separator: " ")
    }

    /// When the machine booted (`btime` of `/proc/stat`), in seconds since 1970.
    private static func bootTime() -> Double? {
        guard let stat = readText("/proc/stat") else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst("btime ".count).trimmingPrefix(" "))
        }
        return nil
    }

    /// The entries of `/proc/self/fd`, less the one this count opens. Read with readdir, not Foundation's directory
    /// listing (see `HeraldProcess` in the tests for what Foundation's /proc/self/fd scan can do).
    private static func openFileDescriptorCount() -> Double? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            if !isDotEntry(entry) { count += 1 }
        }
        return Double(max(0, count - 1))
    }

    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19

    /// Whether a directory entry is `.` or `..`, read in place. Not `entry.pointee.d_name`, which copies all 256 bytes
    /// of the field: an entry is only as long as its name (`d_reclen`), and one at the end of readdir's buffer then
    /// reads past it. A full test run crashed so in a `/metrics` scrape ("Bad pointer dereference" in memcpy, here).
    /// The name ends with a NUL, so its first three bytes are read only as far as it goes.
    static func isDotEntry(_ entry: UnsafePointer<dirent>) -> Bool {
        let name = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: UInt8.self)
        let dot = UInt8(ascii: ".")
        guard name[0] == dot else { return false }
        return name[1] == 0 || (name[1] == dot && name[2] == 0)
    }

    /// A small file of /proc, read to its end (their size is reported as 0, so it is read in chunks).
    private static func readText(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > 1_048_576 { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
    #endif
}
