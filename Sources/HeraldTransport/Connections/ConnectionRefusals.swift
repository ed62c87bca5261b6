import NIOCore

/// What the connection guard answers when it refuses a connection or a request outside any route: complete HTTP/1.1
/// answers (status line, headers with `Connection: close`, body), written as raw bytes. The guard decides when; the
/// server decides what they say, in its own error shape (Herald's: `CannedAnswer` and its `ErrorCode`s).
package struct ConnectionRefusals: Sendable {
    /// 503: the server holds as many connections as it accepts (``ConnectionLimits/maximumConnections``).
    package var tooManyConnections: ByteBuffer
    /// 429: the client's address holds as many as it may (``ConnectionLimits/maximumConnectionsPerAddress``).
    package var tooManyConnectionsFromAddress: ByteBuffer
    /// 503: a WebSocket handshake while every WebSocket slot is taken.
    package var noWebSocketSlot: ByteBuffer
    /// 400: an HTTP/1.1 request without a `Host` header (RFC 9112 §3.2).
    package var missingHost: ByteBuffer
    /// 408 with the sentence given (which part of the request did not arrive in time).
    package var requestTimeout: @Sendable (String) -> ByteBuffer
    /// 400 for bytes the HTTP parser refused, with its description of them.
    package var malformedHTTP: @Sendable (String) -> ByteBuffer

    package init(
        tooManyConnections: ByteBuffer, tooManyConnectionsFromAddress: ByteBuffer, noWebSocketSlot: ByteBuffer,
        missingHost: ByteBuffer, requestTimeout: @escaping @Sendable (String) -> ByteBuffer,
        malformedHTTP: @escaping @Sendable (String) -> ByteBuffer
    ) {
        self.tooManyConnections = tooManyConnections
        self.tooManyConnectionsFromAddress = tooManyConnectionsFromAddress
        self.noWebSocketSlot = noWebSocketSlot
        self.missingHost = missingHost
        self.requestTimeout = requestTimeout
        self.malformedHTTP = malformedHTTP
    }
}
