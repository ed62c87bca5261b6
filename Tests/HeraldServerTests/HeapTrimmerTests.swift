#if canImport(Glibc)
import Glibc
import Testing

@testable import HeraldServer

@Suite("Heap trimmer")
struct HeapTrimmerTests {
    /// Memory freed between live allocations stays resident until a trim gives it back.
    ///
    /// Residency is read page by page (`mincore`) for the freed blocks alone, not from the process's RSS: tests run in
    /// parallel, allocate meanwhile, and each test server's own trimmer (every 5 s) may trim the same heap first. So
    /// the test asks only what the contract says: after a trim, the freed blocks' pages are no longer resident.
    @Test func freedMemoryBetweenLiveAllocationsLeavesTheProcess() throws {
        let blocks = 2_048
        let blockBytes = 64 * 1_024  // below glibc's mmap threshold: from the heap
        var freed: [UnsafeMutableRawPointer] = []
        var pins: [UnsafeMutableRawPointer] = []
        for _ in 0..<blocks {
            let block = try #require(malloc(blockBytes))
            memset(block, 0x5a, blockBytes)  // resident
            freed.append(block)
            // Keeps the freed blocks off the heap's top: glibc's trim gives back a thread arena's free chunks but not
            // its top, and a small pin came from a free list elsewhere in a loaded run (the blocks then merged into
            // the top when freed, and stayed resident). A pin of the blocks' size comes from where they came from.
            pins.append(try #require(malloc(blockBytes)))
        }
        defer { for pin in pins { free(pin) } }
        let pages = try freed.reduce(0) { $0 + (try Self.wholePages(of: $1, bytes: blockBytes)).count }
        let residentWhileLive = try freed.reduce(0) { $0 + (try Self.residentPages(of: $1, bytes: blockBytes)) }
        #expect(residentWhileLive == pages, "the blocks were written, so every page of them is resident")
        let addresses = freed
        for block in freed { free(block) }

        HeapTrimmer.trim()

        // The blocks' whole pages (15 or 16 of each 16) can go; other tests allocate meanwhile and may reuse a few.
        let residentAfterTrim = try addresses.reduce(0) { $0 + (try Self.residentPages(of: $1, bytes: blockBytes)) }
        #expect(residentAfterTrim <= pages / 2, "\(residentAfterTrim) of \(pages) freed pages still resident")
    }

    /// The page-aligned range inside a block.
    private static func wholePages(of block: UnsafeMutableRawPointer, bytes: Int) throws -> Range<Int> {
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        let start = Int(bitPattern: block)
        let first = (start + pageSize - 1) / pageSize
        let end = (start + bytes) / pageSize
        return first..<max(first, end)
    }

    /// How many of the whole pages inside a block are resident (`mincore`, a page at a time: a page that is no longer
    /// mapped, where glibc gave a whole heap back, counts as not resident).
    private static func residentPages(of block: UnsafeMutableRawPointer, bytes: Int) throws -> Int {
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        var resident = 0
        for page in try wholePages(of: block, bytes: bytes) {
            var vector: UInt8 = 0
            let address = try #require(UnsafeMutableRawPointer(bitPattern: page * pageSize))
            if mincore(address, pageSize, &vector) == 0, vector & 1 == 1 { resident += 1 }
        }
        return resident
    }
}
#endif
