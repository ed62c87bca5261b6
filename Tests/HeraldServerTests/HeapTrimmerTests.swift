#if canImport(Glibc)
import Glibc
import Testing

@testable import HeraldServer

@Suite("Heap trimmer")
struct HeapTrimmerTests {
    /// Memory freed between live allocations stays resident until the trimmer gives it back.
    @Test func freedMemoryBetweenLiveAllocationsLeavesTheProcess() throws {
        let blocks = 2_048
        let blockBytes = 64 * 1_024  // below glibc's mmap threshold: from the heap
        var freed: [UnsafeMutableRawPointer] = []
        var pins: [UnsafeMutableRawPointer] = []
        for _ in 0..<blocks {
            let block = try #require(malloc(blockBytes))
            memset(block, 0x5a, blockBytes)  // resident
            freed.append(block)
            pins.append(try #require(malloc(32)))  // keeps the freed blocks apart and off the heap's top
        }
        for block in freed { free(block) }
        let before = try #require(ProcessMetrics.current().residentMemoryBytes)

        #expect(HeapTrimmer.trim())

        let after = try #require(ProcessMetrics.current().residentMemoryBytes)
        let released = before - after
        // 128 MiB were freed; every whole page of each freed block can go (15 or 16 of 16), other tests allocate
        // meanwhile: at least half must have left.
        #expect(released >= Double(blocks * blockBytes / 2), "released \(Int(released) / 1_048_576) MiB")
        for pin in pins { free(pin) }
    }
}
#endif
