import Foundation
import HeraldCore
import Synchronization

/// A wall clock that tests set and advance by hand.
///
/// ```swift
/// let clock = TestClock(Date(timeIntervalSince1970: 1_700_000_000))
/// clock.advance(by: 3_600)
/// ```
public final class TestClock: WallClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_763_769_600)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to a given time.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
