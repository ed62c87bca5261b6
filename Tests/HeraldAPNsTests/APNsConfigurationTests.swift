import Foundation
import HeraldAPNs
import HeraldProviderKit
import HeraldTesting
import Testing
import _CryptoExtras

@Suite("APNs configuration and key loading")
struct APNsConfigurationTests {
    private func configuration(key: APNsKeySource) -> APNsConfiguration {
        APNsConfiguration(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", topic: "com.example.herald")
    }

    private func keyError(_ source: APNsKeySource) -> String? {
        do {
            _ = try configuration(key: source).loadSigningKey()
            return nil
        } catch {
            return error.description
        }
    }

    @Test func loadsAP8Key() throws {
        let path = try TestKey().writeP8()
        _ = try configuration(key: .file(path: path)).loadSigningKey()
        _ = try configuration(key: .pem(TestKey().p8PEM)).loadSigningKey()
    }

    @Test func missingFileIsOneClearLine() {
        #expect(keyError(.file(path: "/nonexistent/AuthKey.p8")) == "HERALD_APNS_KEY_PATH: cannot read /nonexistent/AuthKey.p8: No such file")
    }

    @Test func directoryIsOneClearLine() throws {
        let directory = try TemporaryDirectory.make().path
        #expect(keyError(.file(path: directory)) == "HERALD_APNS_KEY_PATH: cannot read \(directory): Is a directory")
    }

    @Test func textFileIsNotAKey() throws {
        let path = try TestKeys.writeFile(named: "AuthKey.p8", containing: "this is not a key\n")
        #expect(keyError(.file(path: path)) == "HERALD_APNS_KEY_PATH: \(path) is not an ES256 (P-256) private key")
    }

    @Test func emptyFileIsNamed() throws {
        let path = try TestKeys.writeFile(named: "AuthKey.p8", containing: "\n")
        #expect(keyError(.file(path: path)) == "HERALD_APNS_KEY_PATH: \(path) is empty")
    }

    @Test func wrongCurveIsNotAKey() throws {
        let path = try TestKeys.writeFile(named: "AuthKey.p8", containing: TestKeys.p384PEM())
        #expect(keyError(.file(path: path)) == "HERALD_APNS_KEY_PATH: \(path) is not an ES256 (P-256) private key")
    }

    @Test func rsaKeyIsNotAKey() throws {
        let rsa = TestRSAKeys.first.pkcs8PEMRepresentation
        let path = try TestKeys.writeFile(named: "AuthKey.p8", containing: rsa)
        #expect(keyError(.file(path: path)) == "HERALD_APNS_KEY_PATH: \(path) is not an ES256 (P-256) private key")
    }

    @Test func inlinePEMErrorsNameTheInlineOption() {
        #expect(keyError(.pem("garbage")) == "HERALD_APNS_KEY: the value is not an ES256 (P-256) private key")
    }

    @Test func providerInitReportsTheKeyProblem() {
        #expect(throws: APNsConfigurationError(.keyPath, "cannot read /nonexistent/k.p8: No such file")) {
            _ = try APNsProvider(configuration: configuration(key: .file(path: "/nonexistent/k.p8")))
        }
    }

    @Test func settingProblemsNameTheirOptions() {
        var bad = configuration(key: .pem(""))
        bad.keyID = "SHORT"
        bad.teamID = "DEF123GHIJK"
        bad.topic = ""
        bad.productionURL = "http://api.push.apple.com"
        bad.sandboxURL = "https://host/with/path"
        bad.connectionsPerEnvironment = 0
        bad.requestTimeout = .zero
        bad.tokenRefreshInterval = .seconds(3_600)
        #expect(
            bad.settingProblems().map(\.option) == [
                .keyID, .teamID, .topic, .productionURL, .sandboxURL, .connectionsPerEnvironment, .requestTimeout,
                .tokenRefreshInterval,
            ])
        #expect(configuration(key: .pem("")).settingProblems().isEmpty)
        #expect(
            bad.settingProblems().first?.description
                == #"HERALD_APNS_KEY_ID: must be the 10-character Key ID of the .p8 key, got "SHORT""#)
    }

    @Test func checkDescribesWithoutSecrets() throws {
        let key = TestKey()
        let caPath = try TestCertificates.make().writeCA()
        var configuration = APNsConfiguration(
            key: .file(path: try key.writeP8()), keyID: key.keyID, teamID: key.teamID, topic: "com.example.herald",
            trustedCAPath: caPath)
        configuration.requestTimeout = .milliseconds(2_500)
        let lines = try configuration.check()
        #expect(lines.contains("key id: \(key.keyID)"))
        #expect(lines.contains("team id: \(key.teamID)"))
        #expect(lines.contains("topic: com.example.herald"))
        #expect(lines.contains("production endpoint: https://api.push.apple.com"))
        #expect(lines.contains("sandbox endpoint: https://api.sandbox.push.apple.com"))
        #expect(lines.contains("trusted CAs: system roots + 1 certificate from \(caPath)"))
        #expect(lines.contains("request timeout: 2500 ms"))
        #expect(lines.contains("provider token: ES256, renewed every 50 min"))
        #expect(!lines.joined().contains("PRIVATE KEY"))
        let secretBody = key.p8PEM.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        #expect(!lines.joined().contains(secretBody))
    }

    @Test func checkRejectsABadCAFile() throws {
        let path = try TestKeys.writeFile(named: "ca.pem", containing: "not a certificate")
        var configuration = configuration(key: .pem(TestKey().p8PEM))
        configuration.trustedCAPath = path
        #expect(throws: APNsConfigurationError(.trustedCAPath, "\(path) is not a PEM file of CA certificates")) {
            _ = try configuration.check()
        }
    }
}
