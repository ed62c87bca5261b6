import Foundation
import HeraldCore
import HeraldServer
import HeraldTransport
import Logging

/// `HERALD_LOG_FORMAT=json`: one JSON object per line on standard output, for log collectors.
///
/// `{"time": "2026-11-23T11:50:00.123Z", "level": "info", "label": "herald", "message": "Request",
///   "hb.request.id": "…", "method": "POST", "route": "/api/push/notify", "status": "201", "duration_ms": "2.31"}`
///
/// Metadata keys become members (nested metadata stays nested); `time`, `level`, `label`, `message` and `source` win
/// over metadata of the same name.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: JSONObject = [:]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        for (key, value) in merged { object[key] = Self.json(value) }
        object["time"] = .string(Date().formatted(Self.timeFormat))
        object["level"] = .string(event.level.rawValue)
        object["label"] = .string(label)
        object["message"] = .string(event.message.description)
        object["source"] = .string(event.source)
        guard var line = try? JSONValue.object(object).encoded() else { return }
        line.append(UInt8(ascii: "\n"))
        line.withUnsafeBytes { LogLineWriter.standardOutput.write(bytes: $0) }
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }
}
