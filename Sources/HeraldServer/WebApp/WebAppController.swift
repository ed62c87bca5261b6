import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Herald's own web app at `/app` (docs/webapp.md): a progressive web app that subscribes the browser to Web Push,
/// shows each push through its service worker and keeps an inbox. Its files are compiled into the binary
/// (`Resources/App/`), so `herald` serves it with nothing beside it; there is no build step.
///
/// - `GET /app` → `308` to `/app/` (the service worker's scope is `/app/`, which `/app` is not inside);
/// - `GET /app/`: the page; `/app/app.js`, `/app/app.css`, `/app/manifest.webmanifest`, the icons;
/// - `GET /app/sw.js`: the service worker, with `Service-Worker-Allowed: /app/`.
///
/// Every answer carries a strict Content Security Policy (no inline script or style, nothing from elsewhere but
/// notification images, which come from wherever the sender put them).
struct WebAppController<Context: RequestContext>: Sendable {
    func addRoutes(to router: Router<Context>) {
        let app = router.group("app")
        // The router matches `/app` and `/app/` alike; only the second is inside the worker's scope.
        app.get { request, _ in
            guard request.uri.path.hasSuffix("/") else {
                var headers = WebAppFiles.headers(policy: WebAppFiles.pagePolicy)
                headers[.location] = "/app/"
                return Response(status: .permanentRedirect, headers: headers)
            }
            return WebAppFiles.response(for: "")
        }
        for name in WebAppFiles.files.keys where !name.isEmpty {
            app.get(RouterPath(stringLiteral: name)) { _, _ in WebAppFiles.response(for: name) }
        }
    }
}

/// The web app's files (`Resources/App/`, compiled in) and the headers they are served with.
enum WebAppFiles {
    /// One file of the app: its bytes and how it is served.
    struct File: Sendable {
        var bytes: ByteBuffer
        var contentType: String
        var cacheControl: String
    }

    /// The shell is revalidated on every load (the service worker keeps it for offline use); the icons are kept a day.
    static var shellCaching: String { "no-cache" }
    static var iconCaching: String { "public, max-age=86400" }

    /// The page's policy: script, style, manifest, worker and requests from this origin only; images also from `https:`
    /// (a notification's image) and `data:`; no framing, no `<base>`, no form posts elsewhere.
    static var pagePolicy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; "
            + "manifest-src 'self'; worker-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    }

    /// The service worker's policy: its own scripts (`importScripts`); it performs notification actions, which are
    /// requests to the sender's `http(s)` URLs (seed 001's silent actions), so its `connect-src` is open to them.
    static var workerPolicy: String {
        "default-src 'none'; script-src 'self'; connect-src 'self' https: http:; img-src 'self' https: data:"
    }

    /// The files by their name under `/app/`; `""` is the page.
    static let files: [String: File] = [
        "": File(bytes: ByteBuffer(bytes: PackageResources.index_html), contentType: "text/html; charset=utf-8", cacheControl: shellCaching),
        "app.js": File(
            bytes: ByteBuffer(bytes: PackageResources.app_js), contentType: "text/javascript; charset=utf-8", cacheControl: shellCaching),
        "db.js": File(
            bytes: ByteBuffer(bytes: PackageResources.db_js), contentType: "text/javascript; charset=utf-8", cacheControl: shellCaching),
        "topics.js": File(
            bytes: ByteBuffer(bytes: PackageResources.topics_js), contentType: "text/javascript; charset=utf-8", cacheControl: shellCaching),
        "e2e.js": File(
            bytes: ByteBuffer(bytes: PackageResources.e2e_js), contentType: "text/javascript; charset=utf-8", cacheControl: shellCaching),
        "app.css": File(bytes: ByteBuffer(bytes: PackageResources.app_css), contentType: "text/css; charset=utf-8", cacheControl: shellCaching),
        "sw.js": File(
            bytes: ByteBuffer(bytes: PackageResources.sw_js), contentType: "text/javascript; charset=utf-8", cacheControl: shellCaching),
        "manifest.webmanifest": File(
            bytes: ByteBuffer(bytes: PackageResources.manifest_webmanifest), contentType: "application/manifest+json",
            cacheControl: shellCaching),
        "icon192.png": File(bytes: ByteBuffer(bytes: PackageResources.icon192_png), contentType: "image/png", cacheControl: iconCaching),
        "icon512.png": File(bytes: ByteBuffer(bytes: PackageResources.icon512_png), contentType: "image/png", cacheControl: iconCaching),
        "maskable512.png": File(
            bytes: ByteBuffer(bytes: PackageResources.maskable512_png), contentType: "image/png", cacheControl: iconCaching),
        "badge96.png": File(bytes: ByteBuffer(bytes: PackageResources.badge96_png), contentType: "image/png", cacheControl: iconCaching),
    ]

    static func response(for name: String) -> Response {
        guard let file = files[name] else { return Response(status: .notFound) }
        var headers = headers(policy: name == "sw.js" ? workerPolicy : pagePolicy)
        headers[.contentType] = file.contentType
        headers[.cacheControl] = file.cacheControl
        if name == "sw.js" { headers[HTTPField.Name("Service-Worker-Allowed")!] = "/app/" }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: file.bytes))
    }

    /// The headers of every answer under `/app`.
    static func headers(policy: String) -> HTTPFields {
        [
            .contentSecurityPolicy: policy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
    }
}
