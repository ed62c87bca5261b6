import Foundation
import HeraldStore
import HeraldTesting
import Logging
import Testing

@testable import HeraldCore
@testable import HeraldDelivery

/// Topic ids, join codes, and the pipeline's fan-out: one commit, each member against its own limit.
@Suite("Topic fan-out")
struct TopicFanoutTests {
    @Test func aTopicIDIsDistinctFromAUserIDAndTakesEitherCase() {
        let id = TopicID.random()
        #expect(id.text.hasPrefix("tp_") && id.text.count == 63 && id.text == id.text.lowercased())
        #expect(TopicID.accepts(id.text) && TopicID.accepts(id.text.uppercased()))
        #expect(TopicID(id.text.uppercased())?.lookupHash == id.lookupHash)
        #expect(!UserID.accepts(id.text) && !TopicID.accepts(Secrets.random256BitHex()))
        for bad in ["tp_" + String(repeating: "a", count: 59), "tp_" + String(repeating: "a", count: 61), "tx_" + String(repeating: "a", count: 60),
            "tp_" + String(repeating: "g", count: 60), "", "tp_", "tp_" + String(repeating: "é", count: 60)]
        {
            #expect(!TopicID.accepts(bad), "\(bad)")
        }
        #expect(TopicID.random() != id)
    }

    @Test func aJoinCodeIsComparedInItsNormalForm() {
        let code = TopicJoinCode.random()
        #expect(code.count == 23 && code.split(separator: "-").map(\.count) == [5, 5, 5, 5])
        let hash = TopicJoinCode.hash(code)
        #expect(TopicJoinCode.matches(code, hash: hash))
        #expect(TopicJoinCode.matches(code.uppercased().replacingOccurrences(of: "-", with: " "), hash: hash))
        #expect(!TopicJoinCode.matches(TopicJoinCode.random(), hash: hash))
        #expect(!TopicJoinCode.matches("", hash: hash) && !TopicJoinCode.matches(String(repeating: "a", count: 100_000), hash: hash))
        #expect(!TopicJoinCode.matches(code, hash: ""))
    }

    /// An inactive member and one over its daily limit are skipped with their reasons; the third is stored; one
    /// commit holds the accepts, nothing of the skipped ones is stored.
    @Test func eachMemberIsCountedAgainstItsOwnLimit() async throws {
        let store = InMemoryStore()
        let clock = TestClock(Date(timeIntervalSince1970: 1_763_769_600))
        var inactive = Fixtures.device(token: Fixtures.apnsToken(1), at: clock.now()).device
        inactive.isActive = false
        inactive.inactiveReason = "Unregistered"
        var limited = Fixtures.device(token: Fixtures.apnsToken(2), at: clock.now()).device
        limited.dailyLimit = 1
        let open = Fixtures.device(token: Fixtures.apnsToken(3), at: clock.now()).device
        for device in [inactive, limited, open] { try await store.insertDevice(device) }
        let engine = DeliveryEngine(
            store: store, providers: [FakeProvider(platform: .apns)], clock: clock, configuration: .init(deliveryWait: .zero),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let pipeline = SendPipeline(
            store: store, engine: engine, clock: clock, configuration: .init(),
            renderers: PayloadRenderers([:], fallback: SendPipelineTests.DataRenderer()))
        let draft = NotificationDraft(content: NotificationContent(title: "T", body: "B", data: ["k": "v"]))
        _ = try await pipeline.send(draft, to: limited)  // its one of the day

        let targets = [inactive, limited, open].map { FanoutTarget(memberID: UUID(), device: $0) }
        let receipt = try await pipeline.send(draft, toMembers: targets)
        #expect(receipt.delivery == .partial)
        #expect(receipt.members.map(\.memberID) == targets.map(\.memberID))
        #expect(receipt.members.map(\.delivery) == [.skipped, .skipped, .queued])
        guard case .deviceInactive? = receipt.members[0].reason, case .quotaExceeded(let quota)? = receipt.members[1].reason else {
            Issue.record("reasons: \(receipt.members.map(\.reason))")
            return
        }
        #expect(quota.maximum == 1)
        let stored = try #require(receipt.members[2].notification)
        #expect(try await store.notification(id: stored.id)?.deviceID == open.id)
        #expect(try await store.pendingNotifications(deviceID: inactive.id, limit: 10).isEmpty)
        // The direct one only (and the notice that its quota is used up).
        let limitedPending = try await store.pendingNotifications(deviceID: limited.id, limit: 10)
        #expect(limitedPending.filter { $0.collapseID != "herald-rate-limit" }.count == 1)

        let none = try await pipeline.send(draft, toMembers: Array(targets.prefix(2)))
        #expect(none.delivery == .none && none.members.allSatisfy { !$0.isAccepted })
        #expect(try await pipeline.send(draft, toMembers: []).delivery == .none)
    }
}
