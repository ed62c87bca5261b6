import Foundation
import Hummingbird
import NIOCore

/// Reads an HTML form's `application/x-www-form-urlencoded` body, within a size limit.
///
/// ```swift
/// let form = try await FormBody.fields(of: request, limit: 16_384)
/// let title = form["title"] ?? ""
/// ```
enum FormBody {
    /// The fields of the body; a field given twice keeps its first value. 413 over `limit`, 415 for another content
    /// type, 400 for a body that is not valid percent-encoded UTF-8.
    static func fields(of request: Request, limit: Int) async throws -> [String: String] {
        let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else {
            throw APIError(
                hummingbirdStatus: .unsupportedMediaType, message: "Send the form as application/x-www-form-urlencoded.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.bodyTooLarge(limit: limit)
        }
        guard let fields = parse(String(decoding: buffer.readableBytesView, as: UTF8.self)) else {
            throw APIError(.invalidField, message: "The form is not valid URL-encoded text.")
        }
        return fields
    }

    /// The fields of `text` (`a=1&b=x+y`), or `nil` when a percent escape is broken.
    static func parse(_ text: String) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { return nil }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
