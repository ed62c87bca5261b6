import Foundation
import HeraldCore
import Hummingbird
import NIOCore

/// Reads a request body as one JSON object, within the configured size limit.
enum JSONBody {
    static func object(of request: Request, limit: Int) async throws -> JSONObject {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: limit)
        }
        let value: JSONValue
        do {
            value = try JSONValue.decode(Data(buffer.readableBytesView))
        } catch {
            if let key = JSONValue.duplicateKey(in: error) {
                throw APIError.malformedJSON("the key \"\(key)\" appears twice in one object")
            }
            throw APIError.malformedJSON(buffer.readableBytes == 0 ? "the body is empty" : "it does not parse as JSON")
        }
        guard case .object(let object) = value else { throw APIError.malformedJSON("the top level is not an object") }
        return object
    }
}

/// Typed access to the members of a JSON object with errors that name the field's path.
///
/// ```swift
/// let fields = FieldReader(body)
/// let title = try fields.requiredString("title")
/// let snapshot = try fields.optionalObject("snapshot")   // null and "" count as absent
/// ```
struct FieldReader {
    let object: JSONObject
    /// The path of this object, e.g. `snapshot` or `actions[2]`; empty at the top level.
    let path: String

    init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The value, with `null` reported as absent.
    func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func requiredString(_ key: String) throws -> String {
        guard let value = value(key) else { throw APIError.invalidField(path(of: key), "\(path(of: key)) is required.") }
        guard case .string(let string) = value else {
            throw APIError.invalidField(path(of: key), "\(path(of: key)) must be a string.")
        }
        return string
    }

    /// A string that must not be empty.
    func requiredNonEmptyString(_ key: String) throws -> String {
        let string = try requiredString(key)
        guard !string.isEmpty else { throw APIError.invalidField(path(of: key), "\(path(of: key)) must not be empty.") }
        return string
    }

    /// A string where `null` and `""` mean absent.
    func optionalString(_ key: String) throws -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let string) = value else {
            throw APIError.invalidField(path(of: key), "\(path(of: key)) must be a string.")
        }
        return string.isEmpty ? nil : string
    }

    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let bool) = value else {
            throw APIError.invalidField(path(of: key), "\(path(of: key)) must be true or false.")
        }
        return bool
    }

    /// An object where `null` means absent, and `""` too unless `emptyStringIsAbsent` is false (then it is refused).
    func optionalObject(_ key: String, emptyStringIsAbsent: Bool = true) throws -> FieldReader? {
        guard let value = value(key), !(emptyStringIsAbsent && value == .string("")) else { return nil }
        guard case .object(let object) = value else {
            throw APIError.invalidField(path(of: key), "\(path(of: key)) must be an object.")
        }
        return FieldReader(object, path: path(of: key))
    }

    /// An array of strings; `nil` when absent or `null`.
    func optionalStringArray(_ key: String) throws -> [String]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else {
            throw APIError.invalidField(path(of: key), "\(path(of: key)) must be an array of strings.")
        }
        return try items.map { item in
            guard case .string(let string) = item else {
                throw APIError.invalidField(path(of: key), "\(path(of: key)) must be an array of strings.")
            }
            return string
        }
    }

    /// A string that must be one of `allowed`; `nil` when absent.
    func optionalChoice(_ key: String, from allowed: [String]) throws -> String? {
        guard let string = try optionalString(key) else { return nil }
        guard allowed.contains(string) else {
            throw APIError.invalidField(
                path(of: key), "\(path(of: key)) must be one of \(allowed.joined(separator: ", ")); got \"\(string)\".")
        }
        return string
    }
}
