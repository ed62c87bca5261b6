/// A USER_ID: the 256-bit bearer identifier Herald hands a device at registration, which senders and the device owner
/// give back. Its text is 64 hexadecimal characters; Herald hands them out in lowercase, takes either letter case, and
/// keeps and compares the lowercase form. The stores keep only its ``lookupHash``.
///
/// ```swift
/// guard let userID = UserID(text) else { ... }              // not 64 hex characters
/// let device = try await store.device(userID: userID)      // by its lookup hash
/// let fresh = UserID.random()                              // a new registration's
/// ```
///
/// It has no `description`: a USER_ID is a secret, and string interpolation must not put it in a log line by accident.
public struct UserID: Hashable, Sendable {
    /// The 64 lowercase hexadecimal characters.
    public let text: String

    /// The USER_ID of `text` when it has the form of one (64 hexadecimal characters, either letter case); `nil` otherwise.
    public init?(_ text: String) {
        guard Self.accepts(text) else { return nil }
        self.text = text.lowercased()
    }

    private init(lowercaseText: String) {
        text = lowercaseText
    }

    /// Whether `text` has the form of a USER_ID.
    public static func accepts(_ text: String) -> Bool {
        Secrets.isHex256(text)
    }

    /// A new USER_ID of 256 random bits.
    public static func random() -> UserID {
        UserID(lowercaseText: Secrets.random256BitHex())
    }

    /// What the stores key a device by (``Device/userIDHash``): the SHA-256 of the lowercase text, in lowercase hex.
    public var lookupHash: String {
        Secrets.hash(text)
    }
}

extension DeviceStore {
    /// The device registered under `userID`, if any: looked up by ``UserID/lookupHash``.
    public func device(userID: UserID) async throws -> Device? {
        try await device(userIDHash: userID.lookupHash)
    }
}
