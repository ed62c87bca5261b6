import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1

/// The HTTP side of the client commands (`register`, `send`): JSON in, JSON out, and the server's own error
/// sentence when it refuses.
struct ServerClient {
    let server: URL

    init(_ server: String) throws {
        guard let url = URL(string: server), ["http", "https"].contains(url.scheme?.lowercased()), url.host != nil else {
            throw ClientFailure("--server must be an http:// or https:// URL, e.g. http://localhost:8080")
        }
        self.server = url
    }

    /// POSTs `body` to `path`; returns the JSON answer of a 2xx, throws the server's error message otherwise.
    func post(_ path: String, _ body: JSONObject, headers: [(String, String)] = []) async throws -> JSONObject {
        var request = HTTPClientRequest(url: server.appendingPathComponent(path).absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: try JSONValue.object(body).encoded()))
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        } catch {
            throw ClientFailure("cannot reach \(server.absoluteString): \(error)")
        }
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let json = (try? JSONValue.decode(Data(bytes.readableBytesView)).objectValue) ?? [:]
        guard (200..<300).contains(response.status.code) else {
            let message = json["error"]?.stringValue ?? json["message"]?.stringValue ?? json["errorMessage"]?.stringValue ?? "no message"
            let field = json["field"]?.stringValue.map { " (\($0))" } ?? ""
            throw ClientFailure("the server answered \(response.status.code): \(message)\(field)")
        }
        return json
    }
}

/// A client command's failure, printed as one line, exit status 1.
struct ClientFailure: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = "herald: " + message }
}

/// Helpers shared by the client commands.
enum HeraldCLI {
    /// Prints a JSON object on one line.
    static func printJSON(_ object: JSONObject) {
        print((try? JSONValue.object(object).encoded()).map { String(decoding: $0, as: UTF8.self) } ?? "{}")
    }
}
