#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files, which caps how many connections it can hold.
package enum OpenFileLimit {
    /// Descriptors kept for everything that is not a client connection: the store, APNs, logs.
    package static let reserve = 256

    /// Raises the soft limit to the hard one (as Go and nginx do) and returns the new soft limit; `nil` when the
    /// system does not tell.
    package static func raise() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY is the largest value: no cap
    }
}
