import Testing

@testable import HeraldServer

#if canImport(Glibc)
import Glibc

/// `/metrics` counts `/proc/self/fd` with readdir. An entry is only as long as its name, and a full test run crashed
/// in a scrape when the count copied an entry's whole 256-byte name field from the end of readdir's buffer. Here an
/// entry ends right before a page that may not be read (`PROT_NONE`): the check reads only the name's own bytes.
@Suite("Process metrics: directory entries read in place")
struct ProcessMetricsEntryTests {
    @Test(arguments: [".", "..", "7", ".x", "..."])
    func anEntryAtTheEndOfItsBufferIsReadWithoutTouchingTheNextPage(name: String) throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let memory = try #require(mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(memory != MAP_FAILED)
        defer { munmap(memory, 2 * page) }
        try #require(mprotect(memory.advanced(by: page), page, PROT_NONE) == 0)
        // The entry's fixed part and its name with the NUL, ending where the readable page ends.
        let nameOffset = try #require(MemoryLayout<dirent>.offset(of: \dirent.d_name))
        let length = nameOffset + name.utf8.count + 1
        let entry = memory.advanced(by: page - length)
        entry.initializeMemory(as: UInt8.self, repeating: 0, count: length)
        for (index, byte) in name.utf8.enumerated() { entry.storeBytes(of: byte, toByteOffset: nameOffset + index, as: UInt8.self) }
        #expect(MemoryLayout<dirent>.size > length)  // a copy of the whole struct would read the protected page
        let isDot = ProcessMetrics.isDotEntry(entry.assumingMemoryBound(to: dirent.self))
        #expect(isDot == (name == "." || name == ".."))
    }
}
#endif
