import Foundation
import HeraldAPNs
import HeraldFCM
import HeraldServer
import HeraldTesting
import Logging
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test func defaultsWithNothingSet() throws {
        let configuration = try ConfigurationLoader.load(file: nil, environment: ["PATH": "/usr/bin", "HOME": "/root"])
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 8080)
        #expect(configuration.databaseURL == "herald.sqlite")
        #expect(configuration.dailyLimit == 150)
        #expect(configuration.logLevel == .info)
        #expect(configuration.apns == nil)
        #expect(configuration.webSocketConfirmTimeout == .seconds(10))
        #expect(configuration.leaseDuration == 30)
        #expect(configuration.instanceID == nil)
        #expect(configuration.storeTimeout == .seconds(3))
    }

    @Test func theStoreTimeoutIsReadInMillisecondsWithinItsRange() throws {
        let configuration = try ConfigurationLoader.load(file: nil, environment: ["HERALD_STORE_TIMEOUT_MS": "1500"])
        #expect(configuration.storeTimeout == .milliseconds(1_500))
        for refused in ["0", "99", "120001", "soon"] {
            #expect(throws: (any Error).self) {
                _ = try ConfigurationLoader.load(file: nil, environment: ["HERALD_STORE_TIMEOUT_MS": refused])
            }
        }
    }

    @Test func leaseAndInstanceOptions() throws {
        let configuration = try ConfigurationLoader.load(
            file: nil, environment: ["HERALD_LEASE_SECONDS": "12", "HERALD_INSTANCE_ID": "herald-a"])
        #expect(configuration.leaseDuration == 12)
        #expect(configuration.instanceID == "herald-a")
    }

    @Test func theEnvironmentWinsOverTheFile() throws {
        let file = try TestKeys.writeFile(named: "herald.yaml", containing: """
            port: 9000
            HERALD_RATE_LIMIT_DAILY: 20
            log_level: debug
            database_url: sqlite:/tmp/x.sqlite
            """)
        let configuration = try ConfigurationLoader.load(file: file, environment: ["HERALD_PORT": "9100"])
        #expect(configuration.port == 9100)
        #expect(configuration.dailyLimit == 20)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.databaseURL == "sqlite:/tmp/x.sqlite")

        let json = try TestKeys.writeFile(named: "herald.json", containing: #"{"HERALD_HOST": "127.0.0.1", "delivery_wait_ms": 50}"#)
        let fromJSON = try ConfigurationLoader.load(file: json, environment: [:])
        #expect(fromJSON.host == "127.0.0.1")
        #expect(fromJSON.deliveryWait == .milliseconds(50))
    }

    @Test func apnsOptionsBuildTheProviderConfiguration() throws {
        let key = TestKey()
        let path = try key.writeP8()
        let configuration = try ConfigurationLoader.load(file: nil, environment: [
            "HERALD_APNS_KEY_PATH": path, "HERALD_APNS_KEY_ID": key.keyID, "HERALD_APNS_TEAM_ID": key.teamID,
            "HERALD_APNS_TOPIC": "io.herald.app", "HERALD_APNS_CONNECTIONS": "3", "HERALD_APNS_TIMEOUT": "4",
            "HERALD_APNS_SANDBOX_URL": "https://127.0.0.1:9443",
        ])
        let apns = try #require(configuration.apns)
        #expect(apns.key == .file(path: path))
        #expect(apns.topic == "io.herald.app")
        #expect(apns.connectionsPerEnvironment == 3)
        #expect(apns.requestTimeout == .seconds(4))
        #expect(apns.sandboxURL == "https://127.0.0.1:9443")
        #expect(apns.productionURL == APNsConfiguration.defaultProductionURL)
    }

    @Test func fcmOptionsBuildTheProviderConfiguration() throws {
        let configuration = try ConfigurationLoader.load(file: nil, environment: [
            "HERALD_FCM_SERVICE_ACCOUNT": "/etc/herald/sa.json", "HERALD_FCM_BASE_URL": "https://127.0.0.1:9444",
            "HERALD_FCM_CA_PATH": "/etc/herald/ca.pem", "HERALD_FCM_TIMEOUT": "7", "HERALD_FCM_CONNECTIONS": "4",
        ])
        let fcm = try #require(configuration.fcm)
        #expect(fcm.serviceAccount == .file(path: "/etc/herald/sa.json"))
        #expect(fcm.baseURL == "https://127.0.0.1:9444")
        #expect(fcm.trustedCAPath == "/etc/herald/ca.pem")
        #expect(fcm.requestTimeout == .seconds(7))
        #expect(fcm.connections == 4)
        let inline = try ConfigurationLoader.load(file: nil, environment: ["HERALD_FCM_SERVICE_ACCOUNT_JSON": "{\"a\": 1}"])
        #expect(inline.fcm?.serviceAccount == .json("{\"a\": 1}"))
        #expect(inline.fcm?.baseURL == FCMConfiguration.defaultBaseURL)
        #expect(inline.fcm?.connections == 2)
        #expect(try ConfigurationLoader.load(file: nil, environment: [:]).fcm == nil)
    }

    @Test(arguments: [
        (["HERALD_PORT": "99999"], "HERALD_PORT"),
        (["HERALD_PORT": "eighty"], "HERALD_PORT"),
        (["HERALD_RATE_LIMIT_DAILY": "0"], "HERALD_RATE_LIMIT_DAILY"),
        (["HERALD_LEASE_SECONDS": "1"], "HERALD_LEASE_SECONDS"),
        (["HERALD_INSTANCE_ID": "two words"], "HERALD_INSTANCE_ID"),
        (["HERALD_LOG_LEVEL": "loud"], "HERALD_LOG_LEVEL"),
        (["HERALD_PROT": "8080"], "HERALD_PROT"),
        (["HERALD_APNS_KEY_ID": "ABCDEFGHIJ"], "HERALD_APNS_KEY_PATH"),
        (["HERALD_APNS_CA_PATH": "/ca.pem"], "HERALD_APNS_CA_PATH"),
        (["HERALD_APNS_KEY_PATH": "/k.p8", "HERALD_APNS_KEY_ID": "short", "HERALD_APNS_TEAM_ID": "ABCDEFGHIJ", "HERALD_APNS_TOPIC": "a.b"], "HERALD_APNS_KEY_ID"),
        (["HERALD_WEBSOCKET_CONFIRM_TIMEOUT": "0"], "HERALD_WEBSOCKET_CONFIRM_TIMEOUT"),
        (["HERALD_FCM_BASE_URL": "https://fcm.example"], "HERALD_FCM_BASE_URL"),
        (["HERALD_FCM_SERVICE_ACCOUNT": "/sa.json", "HERALD_FCM_SERVICE_ACCOUNT_JSON": "{}"], "HERALD_FCM_SERVICE_ACCOUNT_JSON"),
        (["HERALD_FCM_SERVICE_ACCOUNT": "/sa.json", "HERALD_FCM_BASE_URL": "http://fcm.example"], "HERALD_FCM_BASE_URL"),
        (["HERALD_FCM_SERVICE_ACCOUNT": "/sa.json", "HERALD_FCM_TIMEOUT": "0"], "HERALD_FCM_TIMEOUT"),
        (["HERALD_FCM_SERVICE_ACCOUNT": "/sa.json", "HERALD_FCM_CONNECTIONS": "0"], "HERALD_FCM_CONNECTIONS"),
    ])
    func anInvalidValueIsOneLineNamingTheOption(environment: [String: String], option: String) {
        do {
            _ = try ConfigurationLoader.load(file: nil, environment: environment)
            Issue.record("accepted \(environment)")
        } catch {
            let line = startupMessage(error)
            #expect(line.hasPrefix(option + ":"), "\(line)")
            #expect(!line.contains("\n"))
        }
    }

    @Test func aKeyThatIsNotAnES256KeyStopsStartupWithOneLine() async throws {
        let path = try TestKeys.writeFile(named: "AuthKey.p8", containing: TestKeys.p384PEM())
        var configuration = HeraldConfiguration()
        configuration.databaseURL = "memory:"
        configuration.apns = APNsConfiguration(key: .file(path: path), keyID: "ABCDEFGHIJ", teamID: "ABCDEFGHIJ", topic: "a.b")
        do {
            _ = try await buildApplication(configuration)
            Issue.record("started with a P-384 key")
        } catch {
            #expect(startupMessage(error).hasPrefix("HERALD_APNS_KEY_PATH:"))
        }
        configuration.apns?.key = .file(path: "/nonexistent/AuthKey.p8")
        do {
            _ = try await buildApplication(configuration)
            Issue.record("started with a missing key")
        } catch {
            #expect(startupMessage(error).hasPrefix("HERALD_APNS_KEY_PATH:"))
        }
    }

    @Test func aPostgreSQLURLThatCannotBeReadStopsStartupWithOneLineWithoutThePassword() async throws {
        var configuration = HeraldConfiguration()
        configuration.databaseURL = "postgres://herald:secret@db.example.com/herald?sslmode=sometimes"
        do {
            _ = try await buildApplication(configuration)
            Issue.record("started with \(configuration.databaseURL)")
        } catch {
            let line = startupMessage(error)
            #expect(line.hasPrefix("HERALD_DATABASE_URL:"), "\(line)")
            #expect(line.contains("sslmode"))
            #expect(!line.contains("secret"))
            #expect(!line.contains("\n"))
        }
    }

    @Test func registrationAndClientAddressOptions() throws {
        let defaults = try ConfigurationLoader.load(file: nil, environment: [:])
        #expect(defaults.trustedProxies.isEmpty)
        #expect(defaults.clientAddressHeader == "X-Forwarded-For")
        #expect(defaults.registrationsPerMinute == 20)
        #expect(defaults.maximumDevices == nil)
        #expect(defaults.registrationToken == nil)
        #expect(defaults.adminToken == nil)

        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "HERALD_TRUSTED_PROXIES": "10.0.0.0/8, ::1,192.0.2.7", "HERALD_CLIENT_ADDRESS_HEADER": "X-Real-IP",
                "HERALD_REGISTRATIONS_PER_MINUTE": "0", "HERALD_MAX_DEVICES": "5000",
                "HERALD_REGISTRATION_TOKEN": "3f9c0a7e5b1d4c2a8e6f", "HERALD_ADMIN_TOKEN": "a-long-operator-token",
            ])
        #expect(configuration.trustedProxies == ["10.0.0.0/8", "::1", "192.0.2.7"])
        #expect(configuration.clientAddressHeader == "X-Real-IP")
        #expect(configuration.registrationsPerMinute == 0)
        #expect(configuration.maximumDevices == 5000)
        #expect(configuration.registrationToken == "3f9c0a7e5b1d4c2a8e6f")
        #expect(configuration.adminToken == "a-long-operator-token")
    }

    @Test func connectionAndWebSocketLimitOptions() throws {
        let defaults = try ConfigurationLoader.load(file: nil, environment: [:])
        #expect(defaults.connectionLimits.maximumConnectionsPerAddress == 256)
        #expect(defaults.connectionLimits.connectionsReservedForHTTP == nil)  // a tenth of HERALD_MAX_CONNECTIONS
        #expect(defaults.webSocketSubscribeTimeout == .seconds(10))
        #expect(defaults.webSocketSubscribesPerMinute == 6)

        let configuration = try ConfigurationLoader.load(
            file: nil,
            environment: [
                "HERALD_MAX_CONNECTIONS": "500", "HERALD_MAX_CONNECTIONS_PER_ADDRESS": "0",
                "HERALD_HTTP_RESERVED_CONNECTIONS": "499", "HERALD_WEBSOCKET_SUBSCRIBE_TIMEOUT": "3",
                "HERALD_WEBSOCKET_SUBSCRIBES_PER_MINUTE": "60",
            ])
        #expect(configuration.connectionLimits.maximumConnectionsPerAddress == 0)
        #expect(configuration.connectionLimits.connectionsReservedForHTTP == 499)
        #expect(configuration.webSocketSubscribeTimeout == .seconds(3))
        #expect(configuration.webSocketSubscribesPerMinute == 60)
        #expect {
            try ConfigurationLoader.load(
                file: nil, environment: ["HERALD_MAX_CONNECTIONS": "500", "HERALD_HTTP_RESERVED_CONNECTIONS": "500"])
        } throws: { error in
            (error as? ConfigurationError)?.description.hasPrefix("HERALD_HTTP_RESERVED_CONNECTIONS: 500 leaves no connection for WebSockets") == true
        }
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(file: nil, environment: ["HERALD_WEBSOCKET_SUBSCRIBE_TIMEOUT": "0"])
        }
    }

    @Test(arguments: [
        (["HERALD_TRUSTED_PROXIES": "10.0.0.0/33"], "HERALD_TRUSTED_PROXIES: \"10.0.0.0/33\" is not an IP address or CIDR range"),
        (["HERALD_TRUSTED_PROXIES": "10.0.0.1, proxy.local"], "HERALD_TRUSTED_PROXIES: \"proxy.local\" is not an IP address"),
        (["HERALD_CLIENT_ADDRESS_HEADER": "X Forwarded"], "HERALD_CLIENT_ADDRESS_HEADER: \"X Forwarded\" is not an HTTP header name"),
        (["HERALD_REGISTRATIONS_PER_MINUTE": "-1"], "HERALD_REGISTRATIONS_PER_MINUTE: \"-1\" is not a whole number"),
        (["HERALD_MAX_DEVICES": "0"], "HERALD_MAX_DEVICES: \"0\" is not a whole number from 1"),
        (["HERALD_REGISTRATION_TOKEN": "short"], "HERALD_REGISTRATION_TOKEN: must be 16 to 512 printable ASCII characters"),
        (["HERALD_ADMIN_TOKEN": "with a space in it"], "HERALD_ADMIN_TOKEN: must be 16 to 512 printable ASCII characters"),
    ])
    func invalidRegistrationOptionsAreOneLineNamingTheOption(environment: [String: String], message: String) {
        #expect {
            try ConfigurationLoader.load(file: nil, environment: environment)
        } throws: { error in
            (error as? ConfigurationError)?.description.hasPrefix(message) == true
        }
    }
}
