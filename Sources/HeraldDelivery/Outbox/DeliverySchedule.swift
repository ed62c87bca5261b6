import Foundation
import HeraldCore

/// The scheduler's timer queue: pending notifications nobody holds (retries, parked notifications, notifications that
/// arrived while delivery was saturated, leases taken over), ordered by when their next attempt is due.
///
/// It holds at most `capacity` entries, always the earliest known; what does not fit stays in the store, and
/// ``needsRefill`` tells the scheduler to read the next batch from there when the queue runs low.
struct DeliverySchedule {
    let capacity: Int
    private var heap: [ScheduledAttempt] = []
    private var members: Set<PushNotification.ID> = []
    /// The store holds entries that are not here (one was left out for lack of room, or a refill came back full).
    private(set) var storeHasMore = true

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { heap.count }
    var isEmpty: Bool { heap.isEmpty }
    /// When the earliest entry is due.
    var nextDue: Date? { heap.first?.dueAt }
    /// Whether the scheduler should read more from the store: it may hold more, and fewer than a quarter of the room is used.
    var needsRefill: Bool { storeHasMore && heap.count < capacity / 4 }

    /// Adds (or moves earlier) one entry; an entry later than everything when the queue is full is left to the store.
    mutating func insert(_ attempt: ScheduledAttempt) {
        guard !members.contains(attempt.id) else { return }
        if heap.count >= capacity {
            storeHasMore = true
            return
        }
        members.insert(attempt.id)
        heap.append(attempt)
        siftUp(heap.count - 1)
    }

    /// Adds what a read of the store returned; `complete` says whether the read returned everything there was.
    mutating func refill(with attempts: [ScheduledAttempt], complete: Bool) {
        storeHasMore = !complete
        for attempt in attempts { insert(attempt) }
    }

    /// Marks that the store holds entries the queue does not (e.g. accepted while delivery was saturated).
    mutating func markStoreHasMore() { storeHasMore = true }

    /// Removes and returns up to `limit` entries due at `now`, earliest first.
    mutating func popDue(at now: Date, limit: Int) -> [ScheduledAttempt] {
        var due: [ScheduledAttempt] = []
        while due.count < limit, let first = heap.first, first.dueAt <= now {
            due.append(first)
            members.remove(first.id)
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
        }
        return due
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].dueAt < heap[parent].dueAt else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].dueAt < heap[smallest].dueAt { smallest = left }
            if right < heap.count, heap[right].dueAt < heap[smallest].dueAt { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
