import Foundation

extension UUID {
    /// The lowercase text form, `lowercasedText`: how ids are stored, sent as `apns-id` and answered.
    ///
    /// Written straight from the 16 bytes into the string's own storage. Foundation's `uuidString` formats with
    /// `snprintf`, and `lowercased()` copies the result once more; ids are written out about five times per
    /// notification (the notification's and its device's in the store, `apns-id`, the answer), and those two steps
    /// were 1.5 % of Herald's CPU in scenario 1 (docs/performance.md, "Ids as text").
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = HexDigits.lowercase(byte >> 4)
                    text[position + 1] = HexDigits.lowercase(byte & 0x0F)
                    position += 2
                }
                return position
            }
        }
    }
}
