import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import HeraldWebPush
import Subprocess
import SystemPackage
import Testing

/// Herald's encryption and VAPID header checked by implementations Herald did not write: PyPI's `http-ece` decrypts
/// the body, `py-vapid` verifies the header (scripts/webpush-verify.py). `HERALD_WEBPUSH_VERIFIER_PYTHON` names a Python
/// with both installed (`.ci/run` makes one); without it the test says loudly that it did not run, and
/// `HERALD_REQUIRE_WEBPUSH_VERIFIER=1` (CI) makes that a failure.
@Suite("Web Push interoperability")
struct WebPushInteroperabilityTests {
    static let environment = ProcessInfo.processInfo.environment

    @Test func httpECEDecryptsWhatHeraldEncryptsAndPyVAPIDAcceptsItsHeader() async throws {
        guard let python = Self.environment["HERALD_WEBPUSH_VERIFIER_PYTHON"], !python.isEmpty else {
            if Self.environment["HERALD_REQUIRE_WEBPUSH_VERIFIER"] == "1" {
                Issue.record("HERALD_WEBPUSH_VERIFIER_PYTHON is not set and HERALD_REQUIRE_WEBPUSH_VERIFIER=1")
            } else {
                print("⚠️  Web Push interoperability check DID NOT RUN: set HERALD_WEBPUSH_VERIFIER_PYTHON (see .ci/run)")
            }
            return
        }
        let subscriber = WebPushDecryption.Subscriber()
        let keys = try WebPushEncryption.SubscriptionKeys(p256dh: subscriber.p256dh, auth: subscriber.authText)
        let plaintext = Data(#"{"title":"Door","body":"Opened — ünïcödé"}"#.utf8) + Data(repeating: 0x20, count: 3_900)
        let body = try WebPushEncryption.encrypt(plaintext.prefix(WebPushEncryption.maximumPlaintextSize), for: keys)
        let signer = VAPIDSigner(key: P256.Signing.PrivateKey(), subject: "mailto:ops@example.com")
        let endpoint = try #require(URL(string: "https://updates.push.services.mozilla.com/wpush/v2/gAAAAAB"))
        let request: JSONValue = [
            "body": .string(Base64URL.encode(body)), "private_key": .string(Base64URL.encode(subscriber.privateKey.rawRepresentation)),
            "auth": .string(subscriber.authText), "authorization": .string(signer.authorization(for: endpoint)),
        ]
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/webpush-verify.py").path
        let result = try await Subprocess.run(
            .path(FilePath(python)), arguments: [script], input: .string(String(decoding: try request.encoded(), as: UTF8.self)),
            output: .string(limit: 1 << 20), error: .string(limit: 1 << 20))
        #expect(result.terminationStatus.isSuccess, "\(result.standardError)")
        let answer = try #require(JSONValue.decode(Data(result.standardOutput.utf8)).objectValue)
        #expect(answer["plaintext"] == .string(Base64URL.encode(plaintext.prefix(WebPushEncryption.maximumPlaintextSize))))
        #expect(answer["vapid_valid"] == true)
        #expect(answer["claims"]?.objectValue?["aud"] == "https://updates.push.services.mozilla.com")
        #expect(answer["claims"]?.objectValue?["sub"] == "mailto:ops@example.com")
    }
}
