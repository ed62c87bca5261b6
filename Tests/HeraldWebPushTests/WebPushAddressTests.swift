import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldWebPush
import Testing

/// Web Push's side of a device's address: the subscription's keys are the address's data, in a form only this module
/// reads, and a registration's `subscription` is read by the module's rules (issue 38, section 2).
@Suite("Web Push address")
struct WebPushAddressTests {
    static let p256dh = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
    static let auth = "tBHItJI5svbpez7KI4CCXg"

    @Test func theKeysRoundTripThroughTheAddressDataInTheFormTheMigrationsWrite() {
        let keys = WebPushKeys(p256dh: Self.p256dh, auth: Self.auth)
        // SQLite v22 and PostgreSQL 19 concatenate exactly this from the former columns.
        #expect(keys.addressData == #"{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}"#)
        #expect(WebPushKeys(addressData: keys.addressData) == keys)
        #expect(WebPushKeys(addressData: nil) == nil)
        #expect(WebPushKeys(addressData: "ring=blue") == nil)
        #expect(WebPushKeys(addressData: #"{"p256dh":"x"}"#) == nil)
    }

    @Test func aSubscriptionIsTheEndpointAsTokenAndTheKeysAsData() throws {
        let rules = WebPushAddressRules(policy: .knownServicesOnly)
        let endpoint = "https://fcm.googleapis.com/fcm/send/abc"
        let body: JSONObject = [
            "platform": "webpush",
            "subscription": ["endpoint": .string(endpoint), "keys": ["p256dh": .string(Self.p256dh), "auth": .string(Self.auth)]],
        ]
        let address = try rules.address(from: RegistrationFields(body))
        #expect(address.token == endpoint)
        #expect(WebPushKeys(addressData: address.data) == WebPushKeys(p256dh: Self.p256dh, auth: Self.auth))
        #expect(rules.capsDistinctTokens)
        #expect(!rules.takesPushToStartTokens)
    }

    @Test(arguments: [
        (#"{"token": "x"}"#, "token"),
        (#"{}"#, "subscription"),
        (#"{"subscription": {"endpoint": "http://fcm.googleapis.com/x", "keys": {}}}"#, "subscription.endpoint"),
        (#"{"subscription": {"endpoint": "https://fcm.googleapis.com/x"}}"#, "subscription.keys"),
        (#"{"subscription": {"endpoint": "https://fcm.googleapis.com/x", "keys": {"p256dh": "AAAA", "auth": "tBHItJI5svbpez7KI4CCXg"}}}"#, "subscription.keys.p256dh"),
    ])
    func aBadSubscriptionIsRefusedNamingItsField(body: String, field: String) throws {
        guard case .object(let object) = try JSONValue.decode(Data(body.utf8)) else { Issue.record("not an object"); return }
        #expect(throws: RegistrationFieldError.self) { try WebPushAddressRules(policy: .knownServicesOnly).address(from: RegistrationFields(object)) }
        do {
            _ = try WebPushAddressRules(policy: .knownServicesOnly).address(from: RegistrationFields(object))
        } catch {
            #expect(error.field == field)
        }
    }
}
