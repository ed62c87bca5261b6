import Foundation
import HeraldTransport
import Testing

@Suite("Log line writer")
struct LogLineWriterTests {
    /// Lines logged from many threads at once come out whole, each thread's in its order, all of them by the time
    /// `flush()` returns.
    @Test func linesFromManyThreadsComeOutWholeInOrderAndFlushed() async throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }  // the write end stays with the writer thread, which runs as long as the process
        let writer = LogLineWriter(fileDescriptor: ends[1])
        let threads = 8
        let linesPerThread = 400  // 3,200 lines of 8 bytes: well within a pipe's 64 KiB, so nothing waits for a reader
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for line in 0..<linesPerThread { writer.write("t\(thread) \(String(format: "%04d", line))\n") }
                }
            }
        }
        writer.flush()

        // Everything must be in the pipe now: read without waiting.
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            guard count > 0 else { break }
            received.append(contentsOf: buffer[0..<count])
        }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "")  // the output ends with a whole line
        var next = [Int](repeating: 0, count: threads)
        var malformed = 0
        for line in lines.dropLast() {
            let parts = line.split(separator: " ")
            guard parts.count == 2, parts[0].first == "t", let thread = Int(parts[0].dropFirst()), thread < threads,
                let number = Int(parts[1]), parts[1].count == 4
            else {
                malformed += 1
                continue
            }
            #expect(number == next[thread], "thread \(thread): line \(number) after \(next[thread] - 1)")
            next[thread] = number + 1
        }
        #expect(malformed == 0)
        #expect(next == [Int](repeating: linesPerThread, count: threads))
    }
}
