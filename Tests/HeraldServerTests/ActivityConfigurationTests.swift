import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// `HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE`: the `attributes-type` of the Live Activities Herald starts.
@Suite("PushWard activities: configuration")
struct ActivityConfigurationTests {
    @Test func theAttributesTypeIsASwiftTypeNameAndDefaultsToHeraldActivityAttributes() throws {
        #expect(try ConfigurationLoader.load(file: nil, environment: [:]).liveActivityAttributesType == "HeraldActivityAttributes")
        let configured = try ConfigurationLoader.load(file: nil, environment: ["HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE": "OvenAttributes_2"])
        #expect(configured.liveActivityAttributesType == "OvenAttributes_2")
        for refused in ["2Oven", "Oven Attributes", "Oven.Attributes", String(repeating: "A", count: 129)] {
            #expect(throws: (any Error).self, "\(refused)") {
                _ = try ConfigurationLoader.load(file: nil, environment: ["HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE": refused])
            }
        }
    }

    @Test func theStartPushCarriesTheConfiguredAttributesType() async throws {
        var apns = try await APNsTestServer.start()
        apns.server.configuration.liveActivityAttributesType = "OvenAttributes"
        let server = apns
        try await server.server.run { client in
            let device = try await client.activityDevice()
            #expect(try await client.activity(.patch, "/activities/oven?upsert=true", #"{"state": "ongoing"}"#, as: device).status == .created)
            #expect(await eventually { PushWardActivityTests.activityPushes(server).count == 1 })
            #expect(PushWardActivityTests.activityPushes(server).first?.aps?["attributes-type"] == "OvenAttributes")
        }
        try await apns.shutdown()
    }
}
