import Foundation
import HeraldProviderKit
import HeraldServer
import HeraldTesting
import HeraldWebPush
import Testing

/// `herald webpush check`, the Web Push options, and `herald serve` refusing a bad one with one line.
@Suite("Web Push configuration and command line")
struct WebPushCommandLineTests {
    @Test func theOptionsBuildTheWebPushConfiguration() throws {
        let key = VAPIDKey.generate()
        let configuration = try ConfigurationLoader.load(file: nil, environment: [
            "HERALD_VAPID_SUBJECT": "mailto:ops@example.com", "HERALD_VAPID_PRIVATE_KEY": key,
            "HERALD_WEBPUSH_ALLOWED_HOSTS": "push.home.arpa, 10.0.0.0/8", "HERALD_WEBPUSH_CA_PATH": "/etc/herald/ca.pem",
            "HERALD_WEBPUSH_TIMEOUT": "7", "HERALD_WEBPUSH_MAX_PER_HOST": "4",
        ])
        #expect(
            configuration.webPush
                == WebPushConfiguration(
                    subject: "mailto:ops@example.com", vapidPrivateKey: key, allowedHosts: ["push.home.arpa", "10.0.0.0/8"],
                    trustedCAPath: "/etc/herald/ca.pem", requestTimeout: .seconds(7), maximumPerHost: 4))
        #expect(try ConfigurationLoader.load(file: nil, environment: [:]).webPush == WebPushConfiguration())
        #expect(providerCatalog.entry(of: WebPushModule.self)?.isConfigured(in: configuration) == true)
        #expect(providerCatalog.entry(of: WebPushModule.self)?.isConfigured(in: HeraldConfiguration()) == false)
    }

    @Test(arguments: [
        (["HERALD_VAPID_SUBJECT": "ops@example.com"], "HERALD_VAPID_SUBJECT: \"ops@example.com\" is not a mailto: address or an https: URL"),
        (["HERALD_VAPID_PRIVATE_KEY": "c2hvcnQ"], "HERALD_VAPID_PRIVATE_KEY: must be base64url of a 32-byte P-256 private key"),
        (["HERALD_WEBPUSH_ALLOWED_HOSTS": "10.0.0.0/99"], "HERALD_WEBPUSH_ALLOWED_HOSTS: \"10.0.0.0/99\" is not a host name"),
        (["HERALD_WEBPUSH_MAX_PER_HOST": "0"], "HERALD_WEBPUSH_MAX_PER_HOST"),
    ])
    func aBadOptionIsOneLineNamingIt(environment: [String: String], line: String) {
        #expect {
            try ConfigurationLoader.load(file: nil, environment: environment)
        } throws: { error in
            "\(error)".hasPrefix(line)
        }
    }

    @Test func checkPrintsThePublicKeyNeverThePrivateOneAndServeRefusesABadSubject() async throws {
        let key = VAPIDKey.generate()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment["HERALD_VAPID_SUBJECT"] = "https://example.com/contact"
        environment["HERALD_VAPID_PRIVATE_KEY"] = key
        let check = try await HeraldProcess(["webpush", "check"], environment: environment)
        #expect(await check.waitForExit() == 0, "\(check.log)")
        #expect(check.log.contains("subject: https://example.com/contact"))
        #expect(check.log.contains("public key \(try VAPIDKey.publicKey(of: key))"))
        #expect(!check.log.contains(key))

        environment["HERALD_VAPID_SUBJECT"] = "ops"
        environment["HERALD_DATABASE_URL"] = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        environment["HERALD_PORT"] = "0"
        let serve = try await HeraldProcess(["serve"], environment: environment)
        #expect(await serve.waitForExit() != 0)
        #expect(serve.log.contains("HERALD_VAPID_SUBJECT: \"ops\" is not a mailto: address or an https: URL"))

        let unconfigured = try await HeraldProcess(
            ["webpush", "check"], environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") })
        #expect(await unconfigured.waitForExit() != 0)
        #expect(unconfigured.log.contains("Web Push is not configured"))
    }
}
