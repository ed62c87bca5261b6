import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

@testable import HeraldServer

/// The operator dashboard at /admin, over real HTTP: login, cookie, CSRF, the pages, the test-notification form.
@Suite("Operator dashboard")
struct AdminDashboardTests {
    static let token = "operator-token-0123456789abcdef"

    static func server(_ base: TestServer? = nil) throws -> TestServer {
        var server = try base ?? TestServer()
        server.configuration.adminToken = token
        return server
    }

    @Test func withoutAnAdminTokenAdminIsNotThere() async throws {
        try await TestServer().run { client in
            for (uri, method) in [
                ("/admin", HTTPRequest.Method.get), ("/admin/login", .get), ("/admin/style.css", .get), ("/admin/login", .post),
            ] {
                let response = try await client.execute(uri: uri, method: method)
                #expect(response.status == .notFound, "\(method) \(uri)")
            }
        }
    }

    @Test func theTokenIsKeptOnlyAsItsHashAndComparedInConstantTime() {
        let admin = AdminToken(Self.token)
        let kept = Mirror(reflecting: admin).children.map { "\($0.value)" }
        #expect(kept == [Secrets.hash(Self.token)])
        #expect(admin.accepts(Self.token))
        #expect(!admin.accepts(Self.token + "x"))
        #expect(!admin.accepts(String(Self.token.dropLast())))
        #expect(!admin.accepts(""))
        // The guess is hashed first: what is compared (in constant time) is two digests of the same length.
        #expect(Secrets.hash("a").count == Secrets.hash(Self.token).count)
    }

    @Test func aWrongTokenIsRefusedAndCountsAsAFailedCredentialCheck() async throws {
        try await Self.server().run { client in
            let page = try await client.execute(uri: "/admin/login", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.text.contains(#"name="token""#))

            let wrong = try await client.form("/admin/login", ["token": "not-the-operator-token"])
            #expect(wrong.status == .unauthorized)
            #expect(wrong.headers[.setCookie] == nil)
            #expect(wrong.text.contains("That is not the admin token."))
            let empty = try await client.form("/admin/login", ["token": ""])
            #expect(empty.status == .unauthorized)

            // Ten failures in a minute lock the address out; then even the right token waits.
            for _ in 0..<(AuthFailureLimiter.maximumFailures - 1) {
                #expect(try await client.form("/admin/login", ["token": "still-not-the-token"]).status == .unauthorized)
            }
            let locked = try await client.form("/admin/login", ["token": Self.token])
            #expect(locked.status == .tooManyRequests)
            #expect(locked.headers[.retryAfter] != nil)
            #expect(locked.headers[.setCookie] == nil)
        }
    }

    @Test func loginSetsAStrictHttpOnlyCookieAndLogoutEndsTheSession() async throws {
        try await Self.server().run { client in
            #expect(try await client.execute(uri: "/admin", method: .get).headers[.location] == "/admin/login")

            let login = try await client.form("/admin/login", ["token": Self.token])
            #expect(login.status == .seeOther)
            #expect(login.headers[.location] == "/admin")
            let cookie = try #require(login.headers[.setCookie])
            let attributes = cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(attributes[0].hasPrefix("herald_admin="))
            #expect(Secrets.isHex256(String(attributes[0].dropFirst("herald_admin=".count))))
            #expect(Set(attributes.dropFirst()) == ["Path=/admin", "Max-Age=28800", "HttpOnly", "SameSite=Strict"])
            #expect(!cookie.contains(Self.token))

            let session = DashboardSession(cookie: attributes[0])
            let overview = try await client.execute(uri: "/admin", method: .get, headers: session.headers)
            #expect(overview.status == .ok)
            #expect(overview.text.contains("<h1>Overview</h1>"))
            #expect(overview.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            #expect(overview.headers[.cacheControl] == "no-store")
            #expect(
                try await client.execute(uri: "/admin/login", method: .get, headers: session.headers).headers[.location]
                    == "/admin")

            let csrf = try #require(overview.csrf)
            let logout = try await client.form("/admin/logout", ["csrf": csrf], session: session)
            #expect(logout.status == .seeOther)
            #expect(logout.headers[.location] == "/admin/login?out=1")
            #expect(
                logout.headers[.setCookie]?.hasPrefix("herald_admin=; Path=/admin; Max-Age=0; HttpOnly; SameSite=Strict") == true)
            // The old cookie is worth nothing now.
            let after = try await client.execute(uri: "/admin", method: .get, headers: session.headers)
            #expect(after.status == .seeOther)
            #expect(after.headers[.location] == "/admin/login")
            #expect(try await client.form("/admin/send", ["csrf": csrf], session: session).status == .unauthorized)
        }
    }

    @Test func theCookieIsSecureOnlyWhenATrustedProxySaysTheClientCameOverTLS() async throws {
        var server = try Self.server()
        server.configuration.trustedProxies = ["127.0.0.1"]
        try await server.run { client in
            let overTLS = try await client.form(
                "/admin/login", ["token": Self.token], headers: [.init("X-Forwarded-Proto")!: "https"])
            #expect(overTLS.headers[.setCookie]?.hasSuffix("; Secure") == true)
            let plain = try await client.form(
                "/admin/login", ["token": Self.token], headers: [.init("X-Forwarded-Proto")!: "http"])
            #expect(plain.headers[.setCookie]?.contains("Secure") == false)
        }
        try await Self.server().run { client in  // no trusted proxy: the header is not believed
            let claimed = try await client.form(
                "/admin/login", ["token": Self.token], headers: [.init("X-Forwarded-Proto")!: "https"])
            #expect(claimed.headers[.setCookie]?.contains("Secure") == false)
        }
    }

    @Test func aPostWithoutTheSessionsCSRFTokenIsRefused() async throws {
        let apns = try await APNsTestServer.start()
        try await Self.server(apns.server).run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x31))
            let session = try await client.adminLogin()
            for csrf in [nil, "", String(repeating: "0", count: 64), session.csrf + "0"] {
                var fields = ["user_id": registration.userID, "title": "Forged", "body": "from elsewhere"]
                fields["csrf"] = csrf
                let forged = try await client.form("/admin/send", fields, session: session)
                #expect(forged.status == .forbidden)
                #expect(forged.text.contains("CSRF"))
            }
            #expect(try await client.form("/admin/logout", [:], session: session).status == .forbidden)
            #expect(apns.production.requests.isEmpty)
            // The session still works: nothing was done.
            #expect(try await client.execute(uri: "/admin", method: .get, headers: session.headers).status == .ok)
            // A form in another encoding is not taken either.
            let json = try await client.execute(
                uri: "/admin/send", method: .post, headers: session.headers.merging([.contentType: "application/json"]),
                body: ByteBuffer(string: #"{"csrf": "\#(session.csrf)"}"#))
            #expect(json.status == .unsupportedMediaType)
        }
        try await apns.shutdown()
    }

    @Test func theOverviewCountsDevicesStatesAndProviderErrors() async throws {
        let apns = try await APNsTestServer.start()
        let dead = Fixtures.apnsToken(0x52)
        apns.production.markUnregistered(dead)
        try await Self.server(apns.server).run { client in
            let good = try await client.register(token: Fixtures.apnsToken(0x51))
            let gone = try await client.register(token: dead)
            _ = try await client.post("/api/push/register", #"{"platform": "websocket"}"#)
            #expect(try await client.notify(good.userID).status == .created)
            #expect(try await client.notify(good.userID).status == .created)
            #expect(try await client.notify(gone.userID).status == .gone)

            let session = try await client.adminLogin()
            let page = try await client.execute(uri: "/admin", method: .get, headers: session.headers).text
            #expect(page.contains(#"<tr><td>apns</td><td>active</td><td class="n">1</td></tr>"#))
            #expect(page.contains(#"<tr><td>apns</td><td>inactive</td><td class="n">1</td></tr>"#))
            #expect(page.contains(#"<tr><td>websocket</td><td>active</td><td class="n">1</td></tr>"#))
            #expect(page.contains(#"id="device-total">3<"#))
            #expect(page.contains(#"id="delivered-24h">2<"#))
            #expect(page.contains(#"id="outbox-depth">0<"#))
            #expect(page.contains(#"id="success-rate">66.7 %<"#))
            #expect(page.contains(#"<span class="status delivered">delivered</span></td><td class="n">2</td>"#))
            #expect(page.contains(#"<span class="status failed">failed</span></td><td class="n">1</td>"#))
            #expect(page.contains(#"<tr><td><code>Unregistered</code></td><td class="n">1</td></tr>"#))
            for secret in [good.userID, good.secret, gone.userID, Fixtures.apnsToken(0x51)] { #expect(!page.contains(secret)) }
        }
        try await apns.shutdown()
    }

    @Test func aNotificationIsLookedUpByIdWithItsHistory() async throws {
        let apns = try await APNsTestServer.start()
        try await Self.server(apns.server).run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x61))
            let sent = try await client.notify(registration.userID, title: "Door <b>open</b>", body: "Garage")
            let id = try #require(try sent.json()["id"]?.stringValue)
            let session = try await client.adminLogin()

            let page = try await client.execute(
                uri: "/admin/notification?id=\(id.uppercased())", method: .get, headers: session.headers)
            #expect(page.status == .ok)
            #expect(page.text.contains("<code>\(id)</code> <span class=\"status delivered\">delivered</span>"))
            #expect(page.text.contains("Accepted, counted against the quota of"))
            #expect(page.text.contains("Delivered after 1 attempt (provider id"))
            #expect(page.text.contains("Door &lt;b&gt;open&lt;/b&gt;"))  // escaped, as everything
            #expect(!page.text.contains("<b>open"))
            #expect(!page.text.contains(registration.userID))

            let unknown = try await client.execute(
                uri: "/admin/notification?id=\(UUID().uuidString)", method: .get, headers: session.headers)
            #expect(unknown.status == .notFound)
            #expect(unknown.text.contains("No notification has this id."))
            let malformed = try await client.execute(
                uri: "/admin/notification?id=%3Cscript%3E", method: .get, headers: session.headers)
            #expect(malformed.status == .badRequest)
            #expect(malformed.text.contains("value=\"&lt;script&gt;\""))
            #expect(try await client.execute(uri: "/admin/notification", method: .get, headers: session.headers).status == .ok)
        }
        try await apns.shutdown()
    }

    @Test func aDeviceIsLookedUpByItsUserIDWithoutShowingAnySecret() async throws {
        let apns = try await APNsTestServer.start()
        try await Self.server(apns.server).run { client in
            let token = Fixtures.apnsToken(0x71)
            let registration = try await client.register(token: token, environment: "sandbox")
            let sent = try await client.notify(registration.userID)
            let id = try #require(try sent.json()["id"]?.stringValue)
            let session = try await client.adminLogin()

            let page = try await client.form(
                "/admin/device", ["csrf": session.csrf, "user_id": registration.userID.uppercased()], session: session)
            #expect(page.status == .ok)
            #expect(page.text.contains("<dt>Platform</dt><dd>apns</dd>"))
            #expect(page.text.contains("<dt>Environment</dt><dd>sandbox</dd>"))
            #expect(page.text.contains(#"<span class="status active">active</span>"#))
            #expect(page.text.contains("<code>\(token.prefix(8))… (64 characters)</code>"))
            #expect(page.text.contains("1 of 150 used, 149 left"))
            #expect(page.text.contains("/admin/notification?id=\(id)"))
            for secret in [
                registration.userID, registration.userID.uppercased(), registration.secret, token,
                Secrets.hash(registration.userID),
                Secrets.hash(registration.secret),
            ] {
                #expect(!page.text.contains(secret))
            }

            let unknown = try await client.form(
                "/admin/device", ["csrf": session.csrf, "user_id": Secrets.random256BitHex()], session: session)
            #expect(unknown.status == .notFound)
            let malformed = try await client.form("/admin/device", ["csrf": session.csrf, "user_id": "nope"], session: session)
            #expect(malformed.status == .badRequest)
        }
        try await apns.shutdown()
    }

    @Test func theTestNotificationFormGoesThroughThePipelineToAPNs() async throws {
        let apns = try await APNsTestServer.start()
        try await Self.server(apns.server).run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x81))
            let session = try await client.adminLogin()
            let form = try await client.execute(uri: "/admin/send", method: .get, headers: session.headers)
            #expect(form.status == .ok)
            #expect(form.text.contains(#"name="csrf" value="\#(session.csrf)""#))

            let sent = try await client.form(
                "/admin/send",
                ["csrf": session.csrf, "user_id": registration.userID, "title": "Dashboard test", "body": "Ça marche & more"],
                session: session)
            #expect(sent.status == .seeOther)
            let location = try #require(sent.headers[.location])
            #expect(location.hasPrefix("/admin/notification?id=") && location.hasSuffix("&sent=1"))
            let id = String(location.dropFirst("/admin/notification?id=".count).dropLast("&sent=1".count))

            let push = try #require(await apns.acceptedPush(id: id))
            #expect(push.path == "/3/device/\(Fixtures.apnsToken(0x81))")
            let payload = try #require(try JSONValue.decode(push.body).objectValue)
            let alert = payload["aps"]?.objectValue?["alert"]?.objectValue
            #expect(alert?["title"]?.stringValue == "Dashboard test")
            #expect(alert?["body"]?.stringValue == "Ça marche & more")

            let page = try await client.execute(uri: location, method: .get, headers: session.headers)
            #expect(page.text.contains("Test notification accepted: delivered."))
            // The quota counts it as any send.
            let quota = try await client.form(
                "/admin/device", ["csrf": session.csrf, "user_id": registration.userID], session: session)
            #expect(quota.text.contains("1 of 150 used"))

            // A refusal is said on the form, with the API's status.
            let unknown = try await client.form(
                "/admin/send", ["csrf": session.csrf, "user_id": Secrets.random256BitHex(), "title": "x", "body": "y"],
                session: session)
            #expect(unknown.status == .notFound)
            #expect(unknown.text.contains(#"class="notice error""#))
            let untitled = try await client.form(
                "/admin/send", ["csrf": session.csrf, "user_id": registration.userID, "body": "y"], session: session)
            #expect(untitled.status == .badRequest)
            #expect(apns.production.acceptedPushes.count == 1)
        }
        try await apns.shutdown()
    }

    @Test func theLiveViewListsTheLatestChangesAndReloadsItself() async throws {
        let apns = try await APNsTestServer.start()
        try await Self.server(apns.server).run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x91))
            let id = try #require(try await client.notify(registration.userID).json()["id"]?.stringValue)
            let session = try await client.adminLogin()
            let page = try await client.execute(uri: "/admin/live", method: .get, headers: session.headers)
            #expect(page.status == .ok)
            #expect(page.text.contains(#"<meta http-equiv="refresh" content="3">"#))
            #expect(page.text.contains(#"<a href="/admin/notification?id=\#(id)"><code>\#(id.prefix(8))…</code></a>"#))
            #expect(page.text.contains(#"<td>apns</td>"#))
            #expect(!page.text.contains("<script"))
            let stylesheet = try await client.execute(uri: "/admin/style.css", method: .get)
            #expect(stylesheet.headers[.contentType] == "text/css; charset=utf-8")
        }
        try await apns.shutdown()
    }

    @Test func formBodiesDecodeAsBrowsersEncodeThem() {
        #expect(FormBody.parse("a=1&b=x+y%26z&c=&a=2&d") == ["a": "1", "b": "x y&z", "c": "", "d": ""])
        #expect(FormBody.parse("title=%C3%87a") == ["title": "Ça"])
        #expect(FormBody.parse("broken=%E") == nil)
    }
}

/// A dashboard session as a browser holds it: the cookie, and the CSRF token of its forms.
struct DashboardSession {
    var cookie: String
    var csrf = ""

    var headers: HTTPFields { [.cookie: cookie] }
}

extension TestClientProtocol {
    /// Posts `fields` as an HTML form does.
    func form(_ uri: String, _ fields: [String: String], session: DashboardSession? = nil, headers: HTTPFields = [:]) async throws
        -> TestResponse
    {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.sorted { $0.key < $1.key }.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
        var fields = headers
        fields[.contentType] = "application/x-www-form-urlencoded"
        if let session { fields[.cookie] = session.cookie }
        return try await execute(uri: uri, method: .post, headers: fields, body: ByteBuffer(string: body))
    }

    /// Logs in to the dashboard with ``AdminDashboardTests/token`` and reads the session's CSRF token.
    func adminLogin() async throws -> DashboardSession {
        let login = try await form("/admin/login", ["token": AdminDashboardTests.token])
        let cookie = try #require(login.headers[.setCookie]?.split(separator: ";").first.map(String.init))
        var session = DashboardSession(cookie: cookie)
        let overview = try await execute(uri: "/admin", method: .get, headers: session.headers)
        session.csrf = try #require(overview.csrf)
        return session
    }
}

extension TestResponse {
    /// The body as text.
    var text: String { String(decoding: body.readableBytesView, as: UTF8.self) }

    /// The CSRF token written into the page's forms.
    var csrf: String? {
        guard let range = text.range(of: #"name="csrf" value=""#) else { return nil }
        return String(text[range.upperBound...].prefix(64))
    }
}

extension HTTPFields {
    func merging(_ other: HTTPFields) -> HTTPFields {
        var fields = self
        fields.append(contentsOf: other)
        return fields
    }
}
