/// Faults queued for a double's next requests, first in first out. A run of the same fault is one entry with a
/// count, so that `failNext(1_000_000, …)` costs neither memory nor time per request.
struct FaultQueue<Fault: Equatable & Sendable>: Sendable {
    private var entries: [(fault: Fault, remaining: Int)] = []

    /// Queues `fault` for `count` more requests.
    mutating func append(_ fault: Fault, count: Int) {
        guard count > 0 else { return }
        if let last = entries.last, last.fault == fault {
            entries[entries.count - 1].remaining += count
        } else {
            entries.append((fault, count))
        }
    }

    /// Takes the next queued fault, if any.
    mutating func next() -> Fault? {
        guard let first = entries.first else { return nil }
        if first.remaining <= 1 {
            entries.removeFirst()
        } else {
            entries[0].remaining -= 1
        }
        return first.fault
    }

    /// Forgets every queued fault.
    mutating func removeAll() {
        entries.removeAll()
    }
}
