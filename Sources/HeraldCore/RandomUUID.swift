import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension UUID {
    /// A random (version 4) UUID from the C library's `arc4random_buf`, a CSPRNG.
    ///
    /// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for every UUID: three system calls,
    /// about 3 µs, on every accepted notification. This one takes about 0.4 µs (docs/performance.md, "A cheaper
    /// double, and the per-request costs a fresh profile showed").
    public static func random() -> UUID {
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { arc4random_buf($0.baseAddress!, $0.count) }
        bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4
        bytes.8 = (bytes.8 & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(uuid: bytes)
    }

    /// A time-ordered (version 7, RFC 9562) UUID: the Unix time in milliseconds in its first 48 bits, then 74 random
    /// bits. Notification ids are these, so that each new one goes to the end of the store's primary-key index
    /// instead of a random page of it: one page fewer written per notification (docs/performance.md, "Time-ordered
    /// notification ids"). Their text sorts as their times do.
    public static func timeOrdered(at date: Date) -> UUID {
        var uuid = random().uuid
        let milliseconds = UInt64(max(0, date.unixMilliseconds))
        withUnsafeMutableBytes(of: &uuid) { bytes in
            for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        }
        uuid.6 = (uuid.6 & 0x0F) | 0x70  // version 7
        return UUID(uuid: uuid)
    }
}
