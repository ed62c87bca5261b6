import Foundation

/// A JSON value that keeps integers and doubles apart and encodes object keys in sorted order,
/// so that a payload built from the same input always has the same bytes.
///
/// ```swift
/// let payload: JSONObject = ["aps": ["alert": ["title": "Hi", "body": "there"]]]
/// let bytes = try JSONValue.object(payload).encoded()
/// ```
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The value as a string, if it is one.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value as an object, if it is one.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The value as a number, if it is one (integers are widened).
    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// The JSON text of this value, with sorted keys and unescaped slashes (as `JSONEncoder` with `.sortedKeys` and
    /// `.withoutEscapingSlashes` writes it).
    public func encoded() throws -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        try JSONText.write(self, into: &bytes)
        return Data(bytes)
    }

    /// Decodes a JSON document (RFC 8259, strict; an object with the same key twice is refused).
    public static func decode(_ data: Data) throws -> JSONValue {
        try JSONText.read(data)
    }

    /// The key that appears twice in one object, when that is why `error` (thrown by ``decode(_:)``) was thrown.
    public static func duplicateKey(in error: any Error) -> String? {
        (error as? JSONText.SyntaxError)?.duplicateKey
    }
}

/// A JSON object.
public typealias JSONObject = [String: JSONValue]

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode(JSONObject.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
