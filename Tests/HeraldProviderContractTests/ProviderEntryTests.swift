import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldTesting
import Logging
import Testing

/// The composition root's side of the kit: an entry per provider, built from the application's configuration, and the
/// configuration loading every provider shares.
@Suite("Provider entries and configuration")
struct ProviderEntryTests {
    /// An application's configuration, as the server's holds each provider's settings.
    struct AppSettings: Sendable {
        var stub: StubModule.Configuration?
    }

    /// The one line a composition root adds for the stub provider.
    let catalog = [ProviderEntry<AppSettings>(StubModule.self) { $0.stub }]

    @Test func anEntryBuildsItsProviderOnlyWhenTheSettingsConfigureIt() throws {
        let services = ProviderServices(logger: Logger(label: "test"))
        let entry = try #require(catalog.entry(of: StubModule.self))
        #expect(entry.description.name == "stub")
        #expect(try entry.makeProvider(AppSettings(), services: services) == nil)
        #expect(try entry.check(AppSettings()) == nil)
        #expect(!entry.isConfigured(in: AppSettings()))

        let service = StubPushService()
        let settings = AppSettings(stub: .init(service: service))
        #expect(entry.isConfigured(in: settings))
        let provider = try #require(try entry.makeProvider(settings, services: services) as? StubProvider)
        #expect(provider.service === service)
        #expect(try entry.check(settings) == ["credential: credential-1"])
        #expect(ObjectIdentifier(entry.module) == ObjectIdentifier(StubModule.self))
    }

    /// A notification rendered for another provider when it was accepted (its device moved) reaches the stub in the
    /// stub's own shape, rendered from its content by the renderer the stub's module brings.
    @Test func theStubSendsWhatItsOwnRendererMakesOfTheContent() async throws {
        let service = StubPushService()
        let entry = try #require(catalog.first)
        let provider = try #require(try entry.makeProvider(AppSettings(stub: .init(service: service)), services: ProviderServices(logger: Logger(label: "test"))))
        let device = Fixtures.device(platform: .apns, token: "stub-device-2").device
        var notification = Fixtures.notification(for: device)
        notification.content = NotificationContent(title: "Door", body: "Opened")
        notification.renderedBy = "apns"
        #expect(await provider.send(notification, to: device) == .delivered(providerMessageID: "stub-1"))
        #expect(service.payloads.map { String(decoding: $0, as: UTF8.self) } == [#"{"text":"Door: Opened"}"#])
        #expect(entry.module.renderer.name == "stub")
    }

    @Test func theDescriptionPublishesTheLimits() {
        #expect(catalog.first?.description.limits.maximumTimeToLive == 60)
    }

    enum FakeOption: String, ProviderOption {
        case caPath = "HERALD_FAKE_CA_PATH"
    }

    struct FakeConfiguration: ProviderConfiguration {
        static let trustedCAPathOption = FakeOption.caPath
        var trustedCAPath: String?
    }

    @Test func trustedCertificatesAreLoadedFromAPEMBundleOrRefusedNamingTheOption() throws {
        #expect(try FakeConfiguration(trustedCAPath: nil).loadTrustedCertificates().isEmpty)
        #expect(FakeConfiguration(trustedCAPath: nil).trustedCAsLine([]) == "trusted CAs: system roots")

        let pem = try TestCertificates.make().caCertificatePEM
        let path = try TestKeys.writeFile(named: "two.pem", containing: pem + "\n" + pem)
        let configuration = FakeConfiguration(trustedCAPath: path)
        let certificates = try configuration.loadTrustedCertificates()
        #expect(certificates.count == 2)
        #expect(configuration.trustedCAsLine(certificates) == "trusted CAs: system roots + 2 certificates from \(path)")

        #expect(throws: ProviderConfigurationError(FakeOption.caPath, "cannot read /nonexistent/ca.pem: No such file")) {
            try FakeConfiguration(trustedCAPath: "/nonexistent/ca.pem").loadTrustedCertificates()
        }
        let text = try TestKeys.writeFile(named: "text.pem", containing: "no certificate here\n")
        #expect(throws: ProviderConfigurationError(FakeOption.caPath, "\(text) is not a PEM file of CA certificates")) {
            try FakeConfiguration(trustedCAPath: text).loadTrustedCertificates()
        }
        let error = ProviderConfigurationError(FakeOption.caPath, "is wrong")
        #expect(error.description == "HERALD_FAKE_CA_PATH: is wrong")
        #expect((error as any ProviderConfigurationFailure).description == "HERALD_FAKE_CA_PATH: is wrong")
    }

    @Test func durationsAreDescribedForOperators() {
        #expect(Duration.seconds(10).heraldDescription == "10 s")
        #expect(Duration.milliseconds(250).heraldDescription == "250 ms")
        #expect(Duration.seconds(3_000).heraldDescription == "50 min")
    }
}
