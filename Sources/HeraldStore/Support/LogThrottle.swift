/// Counts events that are worth a log line and says when one may be written: the first at once, then at most one per
/// `interval`, carrying how many events it stands for (an outage does not flood the log).
struct LogThrottle: Sendable {
    let interval: Duration
    private var lastReport: ContinuousClock.Instant?
    private var sinceReport = 0

    init(interval: Duration) {
        self.interval = interval
    }

    /// Counts one event at `now`; returns how many events the line stands for when one is due, otherwise `nil`.
    mutating func record(at now: ContinuousClock.Instant) -> Int? {
        sinceReport += 1
        if let lastReport, now - lastReport < interval { return nil }
        defer { sinceReport = 0 }
        lastReport = now
        return sinceReport
    }
}
