import Foundation

/// The text fields of a `multipart/form-data` body (RFC 7578), as Gotify's and Bark's clients may send them: each part's
/// `name` from its `Content-Disposition` and its content as UTF-8 text. Parts that are files or not UTF-8 are left out.
enum MultipartForm {
    /// The `boundary` parameter of a `multipart/form-data` content type.
    static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            let value = pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            return value.isEmpty || value.utf8.count > 70 ? nil : value
        }
        return nil
    }

    /// Field names (lowercased) and their text; the first of repeated names wins.
    static func fields(_ body: [UInt8], boundary: String) -> [String: String] {
        let delimiter = Array("--\(boundary)".utf8)
        var result: [String: String] = [:]
        var parts: [ArraySlice<UInt8>] = []
        var start: Int?
        var index = 0
        while let found = find(delimiter, in: body, from: index) {
            if let start { parts.append(body[start..<found]) }
            index = found + delimiter.count
            start = index
        }
        for var part in parts {
            // Each part starts with CRLF after the delimiter and ends with CRLF before the next one.
            if part.starts(with: [13, 10]) { part = part.dropFirst(2) }
            if part.last == 10 { part = part.dropLast() }
            if part.last == 13 { part = part.dropLast() }
            guard let split = find([13, 10, 13, 10], in: Array(part), from: 0) else { continue }
            let headerBytes = part.prefix(split)
            let content = part.dropFirst(split + 4)
            guard let headers = String(validating: headerBytes, as: UTF8.self),
                let name = name(in: headers), !headers.lowercased().contains("filename="),
                let text = String(validating: content, as: UTF8.self), result[name] == nil
            else { continue }
            result[name] = text
        }
        return result
    }

    private static func name(in headers: String) -> String? {
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
            guard let range = line.range(of: "name=\"") else { return nil }
            let rest = line[range.upperBound...]
            guard let end = rest.firstIndex(of: "\"") else { return nil }
            return rest[..<end].lowercased()
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count, start <= haystack.count - needle.count else { return nil }
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
