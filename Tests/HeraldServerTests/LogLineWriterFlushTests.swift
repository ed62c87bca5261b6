import Foundation
import HeraldServer
import Testing

/// `herald serve` flushes its log before it exits; a reader that stopped reading must not keep it from exiting.
@Suite("Log line writer: a flush with a reader that does not read")
struct LogLineWriterFlushTests {
    /// With four pipes' worth of lines queued and nobody reading, the writer thread is blocked in `write`: a flush
    /// returns at its bound instead of waiting for ever. Once the reader reads again, every line arrives whole.
    @Test func aFlushGivesUpAtItsBoundWhenNobodyReads() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }  // the write end stays with the writer thread, which runs as long as the process
        let writer = LogLineWriter(fileDescriptor: ends[1])
        let line = String(repeating: "x", count: 1_023) + "\n"
        let lines = 256  // 256 KiB; a pipe holds 64 KiB
        for _ in 0..<lines { writer.write(line) }

        // On a thread of its own, so that a flush without a bound fails this test instead of hanging it.
        let returned = DispatchSemaphore(value: 0)
        let began = ContinuousClock.now
        Thread {
            writer.flush(waitingAtMost: 0.5)
            returned.signal()
        }.start()
        let returnedInTime = returned.wait(timeout: .now() + 10) == .success
        let waited = ContinuousClock.now - began
        #expect(returnedInTime, "the flush waited past its bound")
        #expect(waited >= .milliseconds(450), "the flush returned before its bound although nobody read")

        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while received.count < lines * 1_024 {
            let count = read(ends[0], &buffer, buffer.count)
            guard count > 0 else { break }
            received.append(contentsOf: buffer[0..<count])
        }
        if !returnedInTime { returned.wait() }  // the reader read: even a flush without a bound returns now
        writer.flush()
        #expect(received == Array(String(repeating: line, count: lines).utf8))
    }
}
