/// What the exposition needs to know of a metric beyond what swift-metrics carries: its help text and, for a
/// histogram, its buckets. Each module lists the metrics it reports (``DeliveryMetrics/descriptions``, …); the server's
/// factory looks them up by name.
public struct MetricDescription: Sendable, Equatable {
    /// How the metric is exposed.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// The Prometheus name (`herald_…`, `_total` for counters, `_seconds` for durations).
    public var name: String
    public var kind: Kind
    /// One sentence for `# HELP`.
    public var help: String
    /// The label names, in the order they are given.
    public var labels: [String]
    /// A histogram's bucket upper bounds, in the metric's base unit (seconds for durations); empty for the others.
    public var buckets: [Double]

    public init(_ name: String, _ kind: Kind, labels: [String] = [], buckets: [Double] = [], help: String) {
        self.name = name
        self.kind = kind
        self.help = help
        self.labels = labels
        self.buckets = buckets
    }
}
