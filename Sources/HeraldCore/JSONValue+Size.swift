/// How large a value's JSON text is, without writing it: a size check (APNs' 4096 bytes) that most payloads pass by a
/// wide margin costs a walk over the value instead of an encoding (which formats every double through Foundation).
extension JSONValue {
    /// The most bytes ``encoded()`` can write for this value: exact for everything but doubles, counted at the longest
    /// a double's text can be (24 bytes, `-2.2250738585072014e-308`; 32 are counted).
    ///
    /// ```swift
    /// if JSONValue.object(payload).encodedSizeUpperBound <= 4_096 { /* fits, whatever the doubles are */ }
    /// ```
    public var encodedSizeUpperBound: Int {
        switch self {
        case .null: 4
        case .bool(let value): value ? 4 : 5
        case .int(let value): Self.digits(value)
        case .double: 32
        case .string(let string): Self.encodedSize(of: string)
        case .array(let elements): elements.reduce(1 + max(elements.count, 1)) { $0 + $1.encodedSizeUpperBound }
        case .object(let members):
            members.reduce(1 + max(members.count, 1)) { size, member in
                size + Self.encodedSize(of: member.key) + 1 + member.value.encodedSizeUpperBound
            }
        }
    }

    /// The exact size of a string's JSON text, quotes included (as Herald's writer escapes it).
    static func encodedSize(of string: String) -> Int {
        var size = 2
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x0C, 0x0A, 0x0D, 0x09: size += 2
            case 0x00..<0x20: size += 6
            default: size += 1
            }
        }
        return size
    }

    /// The characters of an integer's decimal text, its sign included.
    static func digits(_ value: Int) -> Int {
        var count = value < 0 ? 2 : 1
        var rest = value.magnitude
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }
}
