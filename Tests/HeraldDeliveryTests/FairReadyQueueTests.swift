import Foundation
@testable import HeraldCore
@testable import HeraldDelivery
import Testing

@Suite("Fair ready queue")
struct FairReadyQueueTests {
    let a = UUID()
    let b = UUID()
    let c = UUID()

    @Test func devicesTakeTurnsAndEachKeepsItsOrder() {
        var queue = FairReadyQueue<String>()
        for index in 1...4 { queue.append("a\(index)", device: a) }
        queue.append("b1", device: b)
        queue.append("c1", device: c)
        queue.append("b2", device: b)
        #expect(queue.count == 7)
        #expect(queue.deviceCount == 3)
        var order: [String] = []
        while let next = queue.popFirst() { order.append(next) }
        #expect(order == ["a1", "b1", "c1", "a2", "b2", "a3", "a4"])
        #expect(queue.isEmpty)
        #expect(queue.deviceCount == 0)
    }

    @Test func aLateDeviceWaitsOneTurnBehindABacklogNotTheWholeOfIt() {
        var queue = FairReadyQueue<Int>()
        for index in 0..<6_000 { queue.append(index, device: a) }
        _ = queue.popFirst()
        _ = queue.popFirst()
        queue.append(-1, device: b)
        // At most one more of the backlog comes before the other device's notification.
        let next = [queue.popFirst(), queue.popFirst()]
        #expect(next.contains(-1))
        #expect(queue.count == 5_997)
    }

    @Test func aDeviceThatRanDryAndComesBackGetsANewTurn() {
        var queue = FairReadyQueue<String>()
        queue.append("a1", device: a)
        #expect(queue.popFirst() == "a1")
        #expect(queue.popFirst() == nil)
        queue.append("b1", device: b)
        queue.append("a2", device: a)
        #expect(queue.popFirst() == "b1")
        #expect(queue.popFirst() == "a2")
    }
}
