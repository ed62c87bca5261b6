import HeraldCore

/// The `timeline` template's history: each update that carries `value` appends one point per series sent, at most
/// ``maximumPointsPerSeries`` kept per series; a client's `history` is honoured only as a seed, while the server has
/// none.
public enum TimelineHistory {
    /// Points kept per series (PushWard: 300).
    public static let maximumPointsPerSeries = 300

    /// The history after an update at `timestamp` carrying `values` (series → number).
    static func appending(_ values: [String: Double], at timestamp: Int, to history: [String: [TimelinePoint]]) -> [String: [TimelinePoint]] {
        var history = history
        for (series, value) in values {
            var points = history[series] ?? []
            points.append(TimelinePoint(timestamp: timestamp, value: value))
            if points.count > maximumPointsPerSeries { points.removeFirst(points.count - maximumPointsPerSeries) }
            history[series] = points
        }
        return history
    }

    /// The history as content carries it: `{"series": [{"timestamp": …, "value": …}, …]}`.
    static func json(_ history: [String: [TimelinePoint]]) -> JSONValue {
        .object(history.mapValues { points in .array(points.map { ["timestamp": .int($0.timestamp), "value": number($0.value)] }) })
    }

    /// A seed from the client's `history`, `nil` when it is not `{series: [{timestamp, value}]}`.
    static func seed(from value: JSONValue) -> [String: [TimelinePoint]]? {
        guard case .object(let object) = value else { return nil }
        var history: [String: [TimelinePoint]] = [:]
        for (series, pointsValue) in object {
            guard case .array(let points) = pointsValue else { return nil }
            var seeded: [TimelinePoint] = []
            for point in points {
                guard case .object(let member) = point, let timestamp = member["timestamp"]?.integerValue,
                    ActivityLimits.unixSeconds.contains(timestamp), let number = member["value"]?.doubleValue
                else { return nil }
                seeded.append(TimelinePoint(timestamp: timestamp, value: number))
            }
            history[series] = Array(seeded.sorted { $0.timestamp < $1.timestamp }.suffix(maximumPointsPerSeries))
        }
        return history
    }

    /// A series (JSON points as ``json(_:)`` writes them) reduced to `threshold` points by Largest-Triangle-Three-
    /// Buckets (Steinarsson 2013), which keeps peaks and the curve's shape; first and last points always kept.
    static func downsampled(_ series: JSONValue, to threshold: Int) -> JSONValue {
        guard case .array(let points) = series else { return series }
        let pairs = points.compactMap { point -> (JSONValue, Double, Double)? in
            guard case .object(let member) = point, let x = member["timestamp"]?.doubleValue, let y = member["value"]?.doubleValue else { return nil }
            return (point, x, y)
        }
        return .array(largestTriangleThreeBuckets(pairs.map { ($0.1, $0.2) }, threshold: threshold).map { pairs[$0].0 })
    }

    /// The indices LTTB keeps of `points` (x, y), in order.
    static func largestTriangleThreeBuckets(_ points: [(x: Double, y: Double)], threshold: Int) -> [Int] {
        guard points.count > threshold else { return Array(points.indices) }
        guard threshold >= 3 else { return threshold == 2 ? [0, points.count - 1] : Array(points.indices.suffix(max(threshold, 0))) }
        var kept = [0]
        let bucketSize = Double(points.count - 2) / Double(threshold - 2)
        var previous = 0
        for bucket in 0..<(threshold - 2) {
            let start = Int(Double(bucket) * bucketSize) + 1
            let end = min(Int(Double(bucket + 1) * bucketSize) + 1, points.count - 1)
            // The average of the next bucket (the last point for the last bucket).
            let nextStart = end
            let nextEnd = min(Int(Double(bucket + 2) * bucketSize) + 1, points.count)
            let next = points[nextStart..<max(nextEnd, nextStart + 1)]
            let averageX = next.map(\.x).reduce(0, +) / Double(next.count)
            let averageY = next.map(\.y).reduce(0, +) / Double(next.count)
            var best = start
            var bestArea = -1.0
            for index in start..<max(end, start + 1) {
                let area = abs(
                    (points[previous].x - averageX) * (points[index].y - points[previous].y)
                        - (points[previous].x - points[index].x) * (averageY - points[previous].y))
                if area > bestArea {
                    bestArea = area
                    best = index
                }
            }
            kept.append(best)
            previous = best
        }
        kept.append(points.count - 1)
        return kept
    }

    static func number(_ value: Double) -> JSONValue {
        value == value.rounded() && abs(value) < 9e15 ? .int(Int(value)) : .double(value)
    }
}

/// The `log` template's backlog: the lines of each update that the backlog does not already start with are
/// prepended, newest first, at most ``maximumLines`` kept.
public enum LogBacklog {
    /// Lines kept (PushWard: 1000).
    public static let maximumLines = 1_000

    /// The backlog after an update whose `lines` (newest first) were sent.
    static func merging(_ lines: [JSONValue], into backlog: [JSONValue]) -> [JSONValue] {
        // The first k lines are new when lines[k...] is how the backlog starts (the client re-sent its window with new
        // lines in front); with no such overlap every line is new.
        var newCount = lines.count
        for start in 0..<lines.count {
            let rest = lines[start...]
            if !backlog.isEmpty, backlog.starts(with: rest) {
                newCount = start
                break
            }
        }
        var kept: [JSONValue] = []
        var bytes = 0
        for line in (Array(lines.prefix(newCount)) + backlog).prefix(maximumLines) {
            bytes += approximateBytes(of: line)
            if bytes > maximumBytes { break }
            kept.append(line)
        }
        return kept
    }

    /// Most bytes the backlog keeps (about its JSON text): the oldest lines go first past it, as past
    /// ``maximumLines``.
    public static let maximumBytes = 262_144

    /// A line's size as stored, near enough: its text's bytes plus room for `at`, `level` and the JSON around them.
    static func approximateBytes(of line: JSONValue) -> Int {
        (line.objectValue?["text"]?.stringValue?.utf8.count ?? 0) + 64
    }
}
