import CoreMetrics
import HeraldCore
import HeraldDelivery
import Prometheus

/// The swift-metrics factory of Herald's Prometheus registry. swift-prometheus' own `PrometheusMetricsFactory`
/// registers every metric without help text, which `promtool check metrics` refuses ("no help text"); this one takes
/// each metric's help and histogram buckets from the ``MetricDescription``s the modules publish, and otherwise maps
/// swift-metrics to the registry as that factory does (counters, meters and non-aggregating recorders as gauges,
/// timers and aggregating recorders as histograms).
struct DescribedMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    private let descriptions: [String: MetricDescription]

    init(registry: PrometheusCollectorRegistry, descriptions: [MetricDescription]) {
        self.registry = registry
        self.descriptions = Dictionary(descriptions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The name and help text of a metric; a metric nobody described still gets a help text (the exposition must
    /// have one).
    private func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: descriptions[name]?.help ?? "Herald metric \(name).")
    }

    private func buckets(_ name: String) -> [Double] {
        descriptions[name]?.buckets ?? [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: buckets(label))
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let buckets = buckets(label).map { Duration.nanoseconds(Int64(($0 * 1e9).rounded())) }
        return registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: buckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        switch handler {
        case let gauge as Prometheus.Gauge: registry.unregisterGauge(gauge)
        case let histogram as ValueHistogram: registry.unregisterValueHistogram(histogram)
        default: break
        }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
