import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// What the sender dialects that other tools speak (ntfy, Gotify, Bark, the webhook presets) read from a request: the
/// body's bytes within the size limit, its kind (JSON, a form, text), the query parameters and the headers, each looked
/// up case-insensitively.
///
/// ```swift
/// let input = try await SenderRequest.read(request, limit: bodyLimit)
/// let title = input.parameter("title", "t")          // query parameter, then form field
/// ```
struct SenderRequest: Sendable {
    /// The kind of body a request carries, from its `Content-Type` and, without one, from its first byte.
    enum BodyKind: Equatable {
        case empty
        case json
        case form
        case multipart(boundary: String)
        case other
    }

    let body: [UInt8]
    let kind: BodyKind
    let headers: HTTPFields
    /// Query parameters by lowercase name, percent-decoded; the first of repeated names wins.
    let query: [String: String]
    /// Form fields (urlencoded or multipart text parts) by lowercase name, when the body is a form.
    let form: [String: String]?

    static func read(_ request: Request, limit: Int) async throws -> SenderRequest {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: limit)
        }
        let body = Array(buffer.readableBytesView)
        return SenderRequest(body: body, headers: request.headers, query: Self.pairs(request.uri.query ?? ""))
    }

    init(body: [UInt8], headers: HTTPFields, query: [String: String]) {
        self.body = body
        self.headers = headers
        self.query = query
        let contentType = headers[.contentType]?.lowercased() ?? ""
        let kind: BodyKind
        if body.isEmpty {
            kind = .empty
        } else if contentType.hasPrefix("application/json") || contentType.hasSuffix("+json") {
            kind = .json
        } else if contentType.hasPrefix("application/x-www-form-urlencoded") {
            kind = .form
        } else if contentType.hasPrefix("multipart/form-data"), let boundary = MultipartForm.boundary(of: headers[.contentType] ?? "") {
            kind = .multipart(boundary: boundary)
        } else {
            kind = .other
        }
        self.kind = kind
        switch kind {
        case .form: form = String(validating: body, as: UTF8.self).map(Self.pairs)
        case .multipart(let boundary): form = MultipartForm.fields(body, boundary: boundary)
        default: form = nil
        }
    }

    /// The body as UTF-8 text, `nil` when it is not valid UTF-8.
    var text: String? { String(validating: body, as: UTF8.self) }

    /// The body as one JSON object; `nil` when it is not one (not JSON, or another JSON value).
    var jsonObject: JSONObject? {
        guard let first = body.first(where: { !" \t\r\n".utf8.contains($0) }), first == UInt8(ascii: "{") else { return nil }
        return (try? JSONValue.decode(Data(body)))?.objectValue
    }

    /// The first header of `names` that is present (names are case-insensitive), RFC 2047 encoded words decoded.
    func header(_ names: String...) -> String? {
        for name in names {
            if let field = HTTPField.Name(name), let value = headers[field] { return EncodedWords.decode(value) }
        }
        return nil
    }

    /// The first of `names` among the query parameters.
    func queryParameter(_ names: String...) -> String? {
        names.lazy.compactMap { query[$0.lowercased()] }.first
    }

    /// `application/x-www-form-urlencoded` (and query string) pairs, `+` as a space, names lowercased.
    static func pairs(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decodeComponent(parts[0]).lowercased()
            guard !name.isEmpty, result[name] == nil else { continue }
            result[name] = parts.count > 1 ? decodeComponent(parts[1]) : ""
        }
        return result
    }

    private static func decodeComponent(_ part: Substring) -> String {
        let spaced = part.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

/// RFC 2047 encoded words in header values (`=?UTF-8?B?8J+agA==?=`, `=?utf-8?q?caf=C3=A9?=`), as ntfy decodes them:
/// UTF-8, US-ASCII and ISO-8859-1 charsets; anything else is left as it is.
enum EncodedWords {
    static func decode(_ value: String) -> String {
        guard value.contains("=?") else { return value }
        var result = ""
        var rest = Substring(value)
        var lastWasWord = false
        while let start = rest.range(of: "=?") {
            let before = rest[..<start.lowerBound]
            let afterStart = rest[start.upperBound...]
            let parts = afterStart.split(separator: "?", maxSplits: 3, omittingEmptySubsequences: false)
            guard parts.count == 4, parts[3].hasPrefix("="), let word = decodeWord(charset: parts[0], encoding: parts[1], text: parts[2])
            else {
                result += rest[..<start.upperBound]
                rest = afterStart
                lastWasWord = false
                continue
            }
            // White space between two encoded words is not shown (RFC 2047 §6.2).
            if !(lastWasWord && before.allSatisfy(\.isWhitespace)) { result += before }
            result += word
            rest = parts[3].dropFirst()
            lastWasWord = true
        }
        return result + rest
    }

    private static func decodeWord(charset: Substring, encoding: Substring, text: Substring) -> String? {
        let bytes: [UInt8]
        switch encoding.lowercased() {
        case "b":
            guard let data = Data(base64Encoded: String(text)) else { return nil }
            bytes = Array(data)
        case "q":
            var decoded: [UInt8] = []
            var index = text.utf8.startIndex
            let utf8 = text.utf8
            while index < utf8.endIndex {
                let byte = utf8[index]
                if byte == UInt8(ascii: "_") {
                    decoded.append(0x20)
                } else if byte == UInt8(ascii: "="), utf8.distance(from: index, to: utf8.endIndex) >= 3,
                    let value = UInt8(String(decoding: utf8[utf8.index(after: index)...utf8.index(index, offsetBy: 2)], as: UTF8.self), radix: 16)
                {
                    decoded.append(value)
                    index = utf8.index(index, offsetBy: 2)
                } else {
                    decoded.append(byte)
                }
                index = utf8.index(after: index)
            }
            bytes = decoded
        default:
            return nil
        }
        switch charset.lowercased() {
        case "utf-8", "utf8", "us-ascii": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1", "latin1": return String(bytes.map { Character(Unicode.Scalar($0)) })
        default: return nil
        }
    }
}
