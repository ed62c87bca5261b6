import Foundation

/// A topic id: `tp_` followed by 60 hexadecimal characters (240 random bits), 63 characters in all. Herald hands them
/// out in lowercase, takes either letter case, and keeps only the SHA-256 of the lowercase text. The prefix and the
/// length tell it apart from a USER_ID (64 hexadecimal characters, no prefix) wherever a send names one or the other;
/// every character is one ntfy allows in a topic name (`[A-Za-z0-9_-]{1,64}`).
///
/// ```swift
/// if let topic = TopicID(text) { ... }          // a send names a topic
/// else if UserID.accepts(text) { ... }         // or a device
/// ```
///
/// Like ``UserID`` it has no `description`: it is a secret.
public struct TopicID: Hashable, Sendable {
    /// What every topic id begins with.
    public static let prefix = "tp_"
    /// How many hexadecimal characters follow the prefix.
    public static let hexLength = 60

    /// The lowercase text.
    public let text: String

    /// The topic id of `text` when it has the form of one; `nil` otherwise.
    public init?(_ text: String) {
        guard Self.accepts(text) else { return nil }
        self.text = text.lowercased()
    }

    private init(lowercaseText: String) {
        text = lowercaseText
    }

    /// Whether `text` has the form of a topic id (`tp_`, either case, and 60 hexadecimal characters).
    public static func accepts(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == prefix.utf8.count + hexLength, text.lowercased().hasPrefix(prefix) else { return false }
        return Secrets.isHex(String(text.dropFirst(prefix.count)))
    }

    /// A new topic id of 240 random bits.
    public static func random() -> TopicID {
        TopicID(lowercaseText: prefix + String(Secrets.random256BitHex().prefix(hexLength)))
    }

    /// What the stores key a topic by (``Topic/topicIDHash``).
    public var lookupHash: String { Secrets.hash(text) }
}

/// A topic's join code: 20 hexadecimal characters (80 random bits) shown in groups of five
/// (`3f9a2-c81d0-7be45-09a6f`); dashes, spaces and letter case do not matter when it is given back. It only works
/// together with the topic id, and the store keeps only the SHA-256 of its normal form, compared in constant time.
public enum TopicJoinCode {
    /// Hexadecimal characters in a join code.
    public static let length = 20

    /// A new join code, as it is shown.
    public static func random() -> String {
        let hex = Array(Secrets.random256BitHex().prefix(length))
        return stride(from: 0, to: length, by: 5).map { String(hex[$0..<$0 + 5]) }.joined(separator: "-")
    }

    /// The normal form of a code a client gives (lowercase hex, no dashes or spaces), or `nil` when it is not one.
    public static func normalized(_ text: String) -> String? {
        guard text.utf8.count <= 64 else { return nil }
        let compact = text.lowercased().filter { $0 != "-" && $0 != " " }
        guard compact.utf8.count == length, Secrets.isHex(compact) else { return nil }
        return compact
    }

    /// The hash the store keeps of a code (given in any form ``normalized(_:)`` accepts).
    public static func hash(_ code: String) -> String {
        Secrets.hash(normalized(code) ?? code)
    }

    /// Whether `code` is the one that hashes to `expectedHash`, compared in constant time. A code that is not in the
    /// form of one is compared too (and fails), so that the time says nothing about the form.
    public static func matches(_ code: String, hash expectedHash: String) -> Bool {
        Secrets.matches(normalized(code) ?? "", hash: expectedHash) && normalized(code) != nil
    }
}
