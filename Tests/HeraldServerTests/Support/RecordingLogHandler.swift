import Logging
import Synchronization

/// Keeps every message logged, with its metadata as text, for tests that check what was logged.
struct RecordingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    final class Records: Sendable {
        private let stored = Mutex<[Record]>([])
        func append(_ record: Record) { stored.withLock { $0.append(record) } }
        var all: [Record] { stored.withLock { $0 } }
        var messages: [String] { all.map(\.message) }
    }

    let records: Records
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        records.append(
            Record(level: event.level, message: event.message.description, metadata: merged.mapValues(\.description)))
    }
}
