/// Lowercase hex digits, for the hex that Herald writes (secret hashes, id text, JSON escapes).
enum HexDigits {
    /// The digit for a value of 0–15.
    static func lowercase(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
