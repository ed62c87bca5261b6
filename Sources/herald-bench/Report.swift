import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One measured figure, with its ratio to the baseline it is compared with and its target, if any.
struct Figure: Codable, Sendable {
    /// "baseline", "1 accept+deliver", …
    var scenario: String
    var name: String
    var value: Double
    /// "req/s", "push/s", "ms", "ms CPU" (CPU time per request or notification), "MB", "KB", "s", "B", "x" (a ratio),
    /// "cores" (CPU time / wall time), "count".
    var unit: String
    /// `value / baseline value`, for throughput and memory figures.
    var ratio: Double?
    /// What `ratio` is against.
    var ratioTo: String?
    /// The issue's target, as text ("≥ 0.5 × bare stack").
    var target: String?
    /// Whether the target was met.
    var met: Bool?
}

/// What the run found: figures, notes, and the facts about the machine and the command.
final class Report: Sendable {
    struct Document: Codable {
        var date: String
        var command: String
        var mode: String
        var machine: Machine
        /// The HTTP load generator of the closed-loop scenarios (`wrk --version`).
        var loadGenerator: String
        var figures: [Figure]
        var notes: [String]
        var durationSeconds: Double
    }

    struct Machine: Codable {
        var cpus: Int
        var cpuModel: String
        var memoryGiB: Double
        var kernel: String
        var openFileLimit: UInt64
    }

    private let figures = Mutex<[Figure]>([])
    private let notes = Mutex<[String]>([])

    @discardableResult
    func add(_ figure: Figure) -> Figure {
        figures.withLock { $0.append(figure) }
        Progress.shared.line(
            "  \(figure.name): \(Format.value(figure.value, unit: figure.unit))"
                + (figure.ratio.map { "  (\(Format.ratio($0)) \(figure.ratioTo ?? ""))" } ?? "")
                + (figure.met.map { $0 ? "  target met" : "  target NOT met" } ?? ""))
        return figure
    }

    func note(_ text: String) {
        notes.withLock { $0.append(text) }
        Progress.shared.line("  note: \(text)")
    }

    var allFigures: [Figure] { figures.withLock { $0 } }
    var allNotes: [String] { notes.withLock { $0 } }

    func document(
        command: String, mode: String, openFileLimit: UInt64, loadGenerator: String, duration: Duration
    ) -> Document {
        let formatter = ISO8601DateFormatter()
        return Document(
            date: formatter.string(from: Date()), command: command, mode: mode,
            machine: Self.machine(openFileLimit: openFileLimit), loadGenerator: loadGenerator, figures: allFigures,
            notes: allNotes, durationSeconds: duration.seconds)
    }

    static func machine(openFileLimit: UInt64) -> Machine {
        let cpuInfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuInfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
            ?? "unknown"
        let memInfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let totalKB =
            memInfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { Double($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let kernel = ((try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Machine(
            cpus: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model,
            memoryGiB: (totalKB / 1_048_576 * 10).rounded() / 10, kernel: kernel, openFileLimit: openFileLimit)
    }

    /// The summary table, one row per figure.
    func table() -> String {
        let header = ["Scenario", "Figure", "Value", "Ratio", "Target", "Met"]
        let rows = allFigures.map { figure in
            [
                figure.scenario, figure.name, Format.value(figure.value, unit: figure.unit),
                figure.ratio.map { "\(Format.ratio($0)) \(figure.ratioTo ?? "")" } ?? "",
                figure.target ?? "", figure.met.map { $0 ? "yes" : "NO" } ?? "",
            ]
        }
        var widths = header.map(\.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func render(_ row: [String]) -> String {
            "| "
                + row.enumerated().map { index, cell in
                    index == 2
                        ? String(repeating: " ", count: widths[index] - cell.count) + cell
                        : cell + String(repeating: " ", count: widths[index] - cell.count)
                }.joined(separator: " | ") + " |"
        }
        var lines = [render(header)]
        lines.append(
            "|"
                + widths.enumerated().map { index, width in
                    index == 2 ? String(repeating: "-", count: width + 1) + ":" : String(repeating: "-", count: width + 2)
                }.joined(separator: "|") + "|")
        lines += rows.map(render)
        return lines.joined(separator: "\n")
    }
}

/// Number formatting for the table and the progress lines.
enum Format {
    static func value(_ value: Double, unit: String) -> String {
        switch unit {
        case "ms": return String(format: "%.2f ms", value)
        case "ms CPU": return String(format: "%.3f ms CPU", value)
        case "s": return String(format: "%.1f s", value)
        case "MB": return String(format: "%.1f MB", value)
        case "KB": return String(format: "%.1f KB", value)
        case "x": return String(format: "%.2f×", value)
        case "cores": return String(format: "%.2f cores", value)
        case "statements": return String(format: "%.2f statements", value)
        case "%": return String(format: "%.1f %%", value)
        case "B": return "\(grouped(value)) B"
        default: return "\(grouped(value)) \(unit)"
        }
    }

    static func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }

    /// A whole number with thousands separators.
    static func grouped(_ value: Double) -> String {
        let rounded = Int(value.rounded())
        let digits = String(abs(rounded))
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return (rounded < 0 ? "-" : "") + result
    }
}

/// Progress on standard error: phase headers, figures as they are measured, and a status line that is rewritten in
/// place on a terminal (printed every few seconds otherwise).
final class Progress: Sendable {
    static let shared = Progress()

    private let isTerminal = isatty(2) == 1
    private let began = ContinuousClock.now
    private let lastStatus = Mutex<(text: String, at: ContinuousClock.Instant?)>(("", nil))

    func phase(_ title: String) {
        line("")
        line("== \(title)  [\(String(format: "%.0f", (ContinuousClock.now - began).seconds)) s]")
    }

    func line(_ text: String) {
        lastStatus.withLock { status in
            if isTerminal, !status.text.isEmpty { write("\r\u{1B}[K") }
            status.text = ""
            write(text + "\n")
        }
    }

    /// Ends the status line: on a terminal it stays as the last state; otherwise nothing is printed.
    func endStatus() {
        lastStatus.withLock { status in
            if isTerminal, !status.text.isEmpty { write("\n") }
            status.text = ""
            status.at = nil
        }
    }

    /// A transient status line: rewritten in place on a terminal, printed every 5 s otherwise.
    func status(_ text: String) {
        let now = ContinuousClock.now
        lastStatus.withLock { status in
            if isTerminal {
                write("\r\u{1B}[K   " + text)
                status.text = text
            } else if status.at.map({ now - $0 >= .seconds(5) }) ?? true {
                write("   " + text + "\n")
                status.at = now
            }
        }
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    var milliseconds: Double { seconds * 1_000 }
}
