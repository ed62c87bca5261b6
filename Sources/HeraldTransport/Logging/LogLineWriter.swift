import Foundation
import Logging

/// Log lines to a file descriptor (standard output for `herald serve`), written in batches by a thread of its own.
///
/// A log call copies its line into a buffer and returns; the thread writes whatever has gathered with one `write` and
/// then waits ``gatherMicroseconds`` for more before it writes again. Under load that is one system call for many lines
/// instead of one per line (the access log writes a line per request); the line of an idle server goes out at once.
/// Lines stay whole and in the order they were logged.
///
/// - A crash loses at most the lines of the last ``gatherMicroseconds``; `herald serve` calls ``flush(waitingAtMost:)``
///   before it exits, which waits 5 s at most for a reader that does not read.
/// - If the reader falls behind (a full pipe), the buffer grows to ``maximumBuffered`` bytes and then log calls wait,
///   as a direct write would.
///
/// ```swift
/// LoggingSystem.bootstrap { StreamLogHandler(label: $0, stream: LogLineWriter.standardOutput.stream) }
/// ```
///
/// **Why it is hand-written.** swift-log's `StreamLogHandler.standardOutput` writes and flushes one line per log call,
/// on the thread that logs (the access log's line, once per request). Scenario 1, three runs each in turn with
/// `perf stat` (docs/performance.md, "Log lines in batches", 2026-11-24): `write` calls per notification 1.33–1.42
/// → 0.43–0.47, context switches 1.77–1.86 → 1.36–1.44. The CPU per notification did not resolve a difference, so
/// the system calls and switches are the figure that keeps it. Herald can go back to the library's stream when
/// swift-log (or a maintained log-handler package) offers a buffered, batched standard-output writer that keeps
/// lines whole and in order and can be flushed at exit; `linesFromManyThreadsComeOutWholeInOrderAndFlushed` is the
/// test such a replacement must pass.
public final class LogLineWriter: @unchecked Sendable {
    /// Standard output, for the whole process.
    public static let standardOutput = LogLineWriter(fileDescriptor: STDOUT_FILENO)

    /// How long the writer gathers lines after a write before the next one: 2 ms.
    public static let gatherMicroseconds: UInt32 = 2_000
    /// The most bytes waiting before log calls wait for the writer.
    public static let maximumBuffered = 4 << 20

    /// Guards every `var` below: `pending`, `isWriterWaiting`, `isWriting`.
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var isWriterWaiting = false
    private var isWriting = false
    private let fileDescriptor: Int32

    /// Starts the writer thread for `fileDescriptor`; the thread runs as long as the process.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        let thread = Thread { [self] in run() }
        thread.name = "herald-log-writer"
        thread.start()
    }

    /// A `TextOutputStream` for swift-log's `StreamLogHandler`, which writes each line with one call.
    public var stream: Stream { Stream(writer: self) }

    /// Queues one line (or several, each ending in a newline).
    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Queues bytes that end in a newline.
    public func write(bytes: UnsafeRawBufferPointer) {
        condition.lock()
        while pending.count >= Self.maximumBuffered { condition.wait() }
        pending.append(contentsOf: bytes)
        let wakeWriter = isWriterWaiting
        condition.unlock()
        // A broadcast, because flushes and waiting log calls wait on the same condition.
        if wakeWriter { condition.broadcast() }
    }

    /// Returns once every line queued before this call is written, or after `seconds` when the reader does not take
    /// them (a full pipe nobody reads): an exit must not wait for its log forever.
    public func flush(waitingAtMost seconds: Double = 5) {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        while !pending.isEmpty || isWriting, condition.wait(until: deadline) {}
        condition.unlock()
    }

    /// The writer thread: waits for lines, writes all that gathered, lets the next ones gather.
    private func run() {
        var batch: [UInt8] = []
        while true {
            condition.lock()
            while pending.isEmpty {
                isWriterWaiting = true
                condition.wait()
            }
            isWriterWaiting = false
            isWriting = true
            swap(&batch, &pending)
            condition.unlock()

            writeAll(batch)
            batch.removeAll(keepingCapacity: true)

            condition.lock()
            isWriting = false
            condition.unlock()
            condition.broadcast()
            usleep(Self.gatherMicroseconds)
        }
    }

    /// Writes the bytes whole; on an error other than an interruption, the rest is dropped (as `fwrite` would).
    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }

    /// The writer as a `TextOutputStream`, for text log lines: each line's control characters are escaped (see
    /// ``escapingControlCharacters(_:)``), so that a value a sender chose cannot end a line early, forge another or
    /// write a NUL byte.
    public struct Stream: TextOutputStream, Sendable {
        let writer: LogLineWriter

        public mutating func write(_ string: String) {
            writer.write(LogLineWriter.escapingControlCharacters(string))
        }
    }

    /// `line` with every control character escaped except its final newline: `\n`, `\r` and `\t` as written here,
    /// the others (C0, DEL, C1) as `\u{1B}`. A line without one is returned as it is (the common case costs one scan of
    /// its bytes).
    public static func escapingControlCharacters(_ line: String) -> String {
        let hasFinalNewline = line.utf8.last == 0x0A
        let body = hasFinalNewline ? line.utf8.dropLast() : line.utf8[...]
        // Control characters are bytes below 0x20, 0x7F, or (C1) 0xC2 followed by 0x80–0x9F.
        guard body.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0xC2 }) else { return line }
        var escaped = ""
        escaped.reserveCapacity(line.utf8.count + 16)
        for scalar in Substring(body).unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.properties.generalCategory == .control:
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        if hasFinalNewline { escaped += "\n" }
        return escaped
    }
}
