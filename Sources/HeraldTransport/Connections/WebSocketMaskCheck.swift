import NIOCore

/// Follows the frames a WebSocket client sends, reading only each frame's header, and reports a frame that is not
/// masked: RFC 6455 §5.1 says a server must close the connection when a client's frame is not masked.
struct WebSocketMaskCheck {
    /// The bytes of the current frame's header read so far (2 to 14 bytes).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to skip.
    private var payloadLeft: UInt64 = 0

    /// Reads `bytes` (the next bytes from the client); false as soon as a frame without a mask begins.
    mutating func scan(_ bytes: ByteBuffer) -> Bool {
        var remaining = bytes.readableBytesView[...]
        while !remaining.isEmpty {
            if payloadLeft > 0 {
                let skipped = Int(min(UInt64(remaining.count), payloadLeft))
                remaining = remaining.dropFirst(skipped)
                payloadLeft -= UInt64(skipped)
                continue
            }
            header.append(remaining.removeFirst())
            guard header.count >= 2 else { continue }
            guard header[1] & 0x80 != 0 else { return false }
            let shortLength = header[1] & 0x7F
            let lengthBytes = shortLength == 126 ? 2 : shortLength == 127 ? 8 : 0
            guard header.count == 2 + lengthBytes + 4 else { continue }
            payloadLeft =
                lengthBytes == 0 ? UInt64(shortLength) : header[2..<(2 + lengthBytes)].reduce(0) { $0 << 8 | UInt64($1) }
            header.removeAll(keepingCapacity: true)
        }
        return true
    }
}
