import DequeModule
import HeraldCore

/// Work waiting for a delivery slot, taken in turn per device: each device that has work waiting gets one item out
/// before any device gets a second. One device's backlog (thousands of notifications for one phone) therefore delays
/// another device's notification by at most one item per other waiting device, never by the whole backlog; within a
/// device the order is first in, first out.
///
/// ```swift
/// var queue = FairReadyQueue<String>()
/// queue.append("a1", device: a); queue.append("a2", device: a); queue.append("b1", device: b)
/// queue.popFirst()  // "a1", then "b1", then "a2"
/// ```
struct FairReadyQueue<Element> {
    private var waiting: [Device.ID: Deque<Element>] = [:]
    /// Devices with work waiting, in the order of their next turn.
    private var turns: Deque<Device.ID> = []
    /// Items waiting, over every device.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Devices with work waiting.
    var deviceCount: Int { turns.count }

    /// Items waiting for one device.
    func count(for device: Device.ID) -> Int { waiting[device]?.count ?? 0 }

    mutating func append(_ element: Element, device: Device.ID) {
        if waiting[device] == nil {
            waiting[device] = [element]
            turns.append(device)
        } else {
            waiting[device]?.append(element)
        }
        count += 1
    }

    /// The next device's oldest item; that device goes to the back of the turns if it has more.
    mutating func popFirst() -> Element? {
        guard let device = turns.popFirst() else { return nil }
        guard let element = waiting[device]?.popFirst() else {
            waiting[device] = nil
            return popFirst()
        }
        count -= 1
        if waiting[device]?.isEmpty == false {
            turns.append(device)
        } else {
            waiting[device] = nil
        }
        return element
    }
}
