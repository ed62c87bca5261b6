import Foundation
import HeraldCore
import Testing

/// A platform is the name of the provider that owns a device's address: an open set, so that a provider added since
/// needs no change to Core (issue 38, section 2).
@Suite("Platform names")
struct PlatformTests {
    @Test func theBuiltInNamesAreTheWireNames() {
        #expect(Platform.builtIn.map(\.rawValue) == ["apns", "fcm", "websocket", "webpush"])
        #expect(Platform(rawValue: "webpush") == .webpush)
    }

    @Test(arguments: ["pigeon", "carrier-owl", "p2", "a_b"])
    func anyShortLowercaseNameIsAPlatform(_ name: String) {
        #expect(Platform(rawValue: name)?.rawValue == name)
    }

    @Test(arguments: ["", "APNs", "web push", "x/y", String(repeating: "a", count: 33), "é"])
    func otherNamesAreNot(_ name: String) {
        #expect(Platform(rawValue: name) == nil)
    }

    @Test func itEncodesAsItsName() throws {
        let encoded = try JSONEncoder().encode([Platform.fcm])
        #expect(String(decoding: encoded, as: UTF8.self) == #"["fcm"]"#)
        #expect(try JSONDecoder().decode([Platform].self, from: Data(#"["pigeon"]"#.utf8)) == [Platform(rawValue: "pigeon")!])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Platform].self, from: Data(#"["Not One"]"#.utf8)) }
    }

    @Test func aDevicesAddressIsItsTokenAndItsProvidersData() {
        let now = Date(timeIntervalSince1970: 0)
        var device = Device(
            userIDHash: "u", secretHash: "s", platform: Platform(rawValue: "pigeon")!, environment: .production, token: "loft-7",
            createdAt: now, updatedAt: now, addressData: "ring=blue")
        #expect(device.address == PushAddress(token: "loft-7", data: "ring=blue"))
        device.address = PushAddress(token: nil)
        #expect(device.token == nil && device.addressData == nil)
    }
}
