import Foundation
import HTTPTypes
import HeraldCore
import HummingbirdTesting
import NIOCore
import Testing

/// The web app's files at `/app` (docs/webapp.md): served from the binary with their types, caching and a strict
/// Content Security Policy. scripts/webapp-browser-test.py drives the app itself in Chromium.
@Suite("Web app files")
struct WebAppTests {
    @Test func appRedirectsIntoTheWorkersScopeAndThePageLoadsOnlyItsOwnFilesUnderAStrictPolicy() async throws {
        try await TestServer().run { client in
            let bare = try await client.execute(uri: "/app", method: .get)
            #expect(bare.status == .permanentRedirect)
            #expect(bare.headers[.location] == "/app/")

            let page = try await client.execute(uri: "/app/", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.headers[.cacheControl] == "no-cache")
            #expect(page.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self';"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("unsafe"))
            let html = String(buffer: page.body)
            // No inline script, style or handler: the policy would refuse them.
            #expect(html.components(separatedBy: "<script").count - 1 == html.components(separatedBy: "<script src=").count - 1)
            #expect(!html.contains("<style"))
            #expect(!html.contains(" style="))
            #expect(html.range(of: #" on[a-z]+="#, options: .regularExpression) == nil)
            // Everything it refers to is served here.
            let references = Self.matches(of: #"(?:src|href)="([^"]+)""#, in: html)
            #expect(references.count >= 5)
            for reference in references {
                #expect(reference.hasPrefix("/app/"), "\(reference)")
                #expect(try await client.execute(uri: reference, method: .get).status == .ok, "\(reference)")
            }
        }
    }

    @Test(arguments: [
        ("/app/app.js", "text/javascript; charset=utf-8"), ("/app/db.js", "text/javascript; charset=utf-8"),
        ("/app/e2e.js", "text/javascript; charset=utf-8"), ("/app/topics.js", "text/javascript; charset=utf-8"),
        ("/app/app.css", "text/css; charset=utf-8"), ("/app/manifest.webmanifest", "application/manifest+json"),
        ("/app/icon192.png", "image/png"), ("/app/badge96.png", "image/png"),
    ])
    func eachFileHasItsType(path: String, type: String) async throws {
        try await TestServer().run { client in
            let response = try await client.execute(uri: path, method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == type)
            #expect(response.headers[.cacheControl] == (type == "image/png" ? "public, max-age=86400" : "no-cache"))
            #expect(response.body.readableBytes > 0)
            #expect(try await client.execute(uri: path, method: .head).status == .ok)
        }
    }

    @Test func theServiceWorkerIsAllowedTheAppsScopeAndMayReachActionURLs() async throws {
        try await TestServer().run { client in
            let worker = try await client.execute(uri: "/app/sw.js", method: .get)
            #expect(worker.status == .ok)
            #expect(worker.headers[.contentType] == "text/javascript; charset=utf-8")
            #expect(worker.headers[HTTPField.Name("Service-Worker-Allowed")!] == "/app/")
            #expect(worker.headers[.cacheControl] == "no-cache")
            let policy = try #require(worker.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self';"))  // importScripts("/app/db.js")
            #expect(policy.contains("connect-src 'self' https: http:"))
            // Every file the worker keeps for offline use is there.
            let script = String(buffer: worker.body)
            let shellStart = try #require(script.range(of: "const SHELL = [")).lowerBound
            let shell = Self.matches(of: #""(/app/[^"]*)""#, in: String(script[shellStart...]))
            #expect(shell.contains("/app/") && shell.contains("/app/app.js") && shell.contains("/app/db.js"))
            #expect(shell.contains("/app/topics.js"))
            for path in Set(shell) {
                #expect(try await client.execute(uri: path, method: .get).status == .ok, "\(path)")
            }
        }
    }

    @Test func theManifestMakesTheAppInstallableWithIconsOfTheSizesItNames() async throws {
        try await TestServer().run { client in
            let response = try await client.execute(uri: "/app/manifest.webmanifest", method: .get)
            let manifest = try #require(try JSONValue.decode(Data(response.body.readableBytesView)).objectValue)
            #expect(manifest["name"] == "Herald")
            #expect(manifest["start_url"] == "/app/")
            #expect(manifest["scope"] == "/app/")
            #expect(manifest["display"] == "standalone")
            guard case .array(let icons)? = manifest["icons"] else { throw TestFailure("icons is not an array") }
            var purposes: Set<String> = []
            var sides: Set<Int> = []
            for icon in icons.compactMap(\.objectValue) {
                let source = try #require(icon["src"]?.stringValue)
                let png = try await client.execute(uri: source, method: .get)
                #expect(png.status == .ok, "\(source)")
                let bytes = Array(png.body.readableBytesView)
                #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(source) is a PNG")
                // IHDR: width and height, big-endian, at bytes 16 and 20.
                let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
                let height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
                #expect(icon["sizes"]?.stringValue == "\(width)x\(height)", "\(source)")
                sides.insert(width)
                purposes.insert(icon["purpose"]?.stringValue ?? "any")
            }
            #expect(sides.isSuperset(of: [192, 512]))
            #expect(purposes == ["any", "maskable"])
        }
    }

    @Test func anUnknownFileUnderAppIs404() async throws {
        try await TestServer().run { client in
            let response = try await client.execute(uri: "/app/nothing.js", method: .get)
            #expect(response.status == .notFound)
        }
    }

    private static func matches(of pattern: String, in text: String) -> [String] {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }
}
