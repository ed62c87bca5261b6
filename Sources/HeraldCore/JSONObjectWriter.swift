/// A JSON object written member by member, for the answers built on every request (the 201 of a send): the same
/// bytes as `JSONValue.object(members).encoded()`, without building and sorting a dictionary first. Members must be
/// added in ascending key order, the order `encoded()` sorts them into; a debug build checks it.
///
/// ```swift
/// var body = JSONObjectWriter()
/// body.add("id", .string(id))
/// body.add("status", .string("delivered"))
/// let bytes = body.finished()   // {"id":"…","status":"delivered"}
/// ```
///
/// **Why it is hand-written.** The library way is Foundation's `JSONEncoder` with `.sortedKeys` (or a
/// `[String: JSONValue]` through ``JSONText``): both build and sort a dictionary for every answer. In a profile of
/// Herald during scenario 1 (docs/performance.md, "Ids as text, and what else was tried", 2026-11-24), writing the
/// 201 member by member took `SendAnswers.created` from 2.1 % to 1.3 % of Herald's samples. The CPU per notification
/// did not resolve that gain on the benchmark machine (runs in turn within the spread), so the figure that keeps it
/// is the profile's share. Herald can go back to the encoder when Foundation's `JSONEncoder` writes a `Codable` struct
/// with sorted keys without an intermediate dictionary at a cost within that 0.8 % (swift-foundation's encoder
/// rewrite is the place to watch); `rateLimitsWrittenMemberByMemberAreTheDictionarysBytes` holds the two forms to
/// the same bytes.
public struct JSONObjectWriter: Sendable {
    private var bytes: [UInt8]
    private var lastKey: String?

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    /// Adds one member; `value` is written as `JSONValue.encoded()` writes it.
    public mutating func add(_ key: String, _ value: JSONValue) {
        startMember(key)
        // Only `.double` can fail (a value JSON has no form for); the answers written this way carry none.
        try? JSONText.write(value, into: &bytes)
    }

    /// Adds one member whose value is another object written this way.
    public mutating func add(_ key: String, _ object: JSONObjectWriter) {
        startMember(key)
        bytes.append(contentsOf: object.finished())
    }

    /// The object's text.
    public func finished() -> [UInt8] {
        bytes + [UInt8(ascii: "}")]
    }

    private mutating func startMember(_ key: String) {
        assert(lastKey.map { $0 < key } ?? true, "members in ascending key order: \(key) after \(lastKey ?? "")")
        if lastKey != nil { bytes.append(UInt8(ascii: ",")) }
        lastKey = key
        JSONText.writeString(key, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }
}
