import Foundation
import HeraldCore
import HeraldServer
import HeraldTesting
import Testing

/// Issue 39, section 4: the callbacks' options and `herald token secret`.
@Suite("Callback configuration")
struct CallbackConfigurationTests {
    @Test func theCallbackOptionsAreReadWithinTheirRanges() throws {
        let defaults = try ConfigurationLoader.load(file: nil, environment: [:]).callbacks
        #expect(defaults == CallbackConfiguration())
        #expect(defaults.requestTimeout == .seconds(10) && defaults.maximumPerHost == 4 && defaults.allowedNetworks.isEmpty)
        let certificates = try TestCertificates.shared.writeCA()
        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "HERALD_CALLBACK_ALLOWED_NETWORKS": " 10.0.0.0/8, fd00::/8 ,192.168.1.5", "HERALD_CALLBACK_CA_PATH": certificates,
                "HERALD_CALLBACK_TIMEOUT": "60", "HERALD_CALLBACK_MAX_PER_HOST": "64",
            ]
        ).callbacks
        #expect(configuration.allowedNetworks == ["10.0.0.0/8", "fd00::/8", "192.168.1.5"])
        #expect(configuration.trustedCAPath == certificates)
        #expect(configuration.requestTimeout == .seconds(60) && configuration.maximumPerHost == 64)
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_CALLBACK_TIMEOUT": "1"]).callbacks.requestTimeout == .seconds(1))
        #expect(try ConfigurationLoader.load(file: nil, environment: ["HERALD_CALLBACK_MAX_PER_HOST": "1"]).callbacks.maximumPerHost == 1)
        let refused: [(String, String)] = [
            ("HERALD_CALLBACK_TIMEOUT", "0"), ("HERALD_CALLBACK_TIMEOUT", "61"), ("HERALD_CALLBACK_TIMEOUT", "soon"),
            ("HERALD_CALLBACK_MAX_PER_HOST", "0"), ("HERALD_CALLBACK_MAX_PER_HOST", "65"), ("HERALD_CALLBACK_MAX_PER_HOST", "-1"),
            ("HERALD_CALLBACK_ALLOWED_NETWORKS", "hooks.example.com"), ("HERALD_CALLBACK_ALLOWED_NETWORKS", "10.0.0.0/33"),
            ("HERALD_CALLBACK_CA_PATH", "/nonexistent/ca.pem"),
        ]
        for (option, value) in refused {
            #expect(throws: ConfigurationError.self, "\(option)=\(value)") {
                _ = try ConfigurationLoader.load(file: nil, environment: [option: value])
            }
            do {
                _ = try ConfigurationLoader.load(file: nil, environment: [option: value])
            } catch let error as ConfigurationError {
                #expect(error.description.hasPrefix(option), "\(error)")
            }
        }
    }

    @Test func tokenSecretPrintsTheWhsecSecretOfAnActiveTokenByNameOrId() async throws {
        let server = try TestServer()
        let (registration, token) = try await server.run { client in
            let registration = try await client.register()
            return (registration, try await client.createToken(for: registration, name: "alarm"))
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment["HERALD_DATABASE_URL"] = server.databasePath
        let expected = CallbackSigning.displayed(CallbackSigning.secret(tokenText: token.token))
        for name in ["alarm", token.id, token.id.uppercased()] {
            let secret = try await HeraldProcess(["token", "secret", "--user-id", registration.userID, name], environment: environment)
            #expect(await secret.waitForExit() == 0, "\(secret.log)")
            #expect(secret.log.split(separator: "\n").contains { $0 == expected }, "\(secret.log)")
            #expect(!secret.log.contains(token.token))
        }
        let unknown = try await HeraldProcess(["token", "secret", "--user-id", registration.userID, "nope"], environment: environment)
        #expect(await unknown.waitForExit() == 1)
        #expect(unknown.log.contains("no active API token \"nope\""))
    }
}
