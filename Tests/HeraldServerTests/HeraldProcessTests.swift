import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The harness of the tests that run `herald` as a child process (``HeraldProcess``): a child is never left blocked
/// on its output, and a wait for a child that does not end fails the test instead of hanging it.
@Suite("Child processes of the tests")
struct HeraldProcessTests {
    /// A child that writes 1 MiB (16 pipe buffers) while the test is busy elsewhere ends: its output is read all along,
    /// not only while the test waits. Without that the child would block in `write` and the wait would time out.
    @Test func aChildThatWritesMoreThanAPipeHoldsEndsWhileTheTestDoesSomethingElse() async throws {
        let child = try await HeraldProcess(
            ["-c", "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo done; exit 3"],
            executable: URL(fileURLWithPath: "/bin/sh"))
        try await Task.sleep(for: .seconds(1))
        #expect(await child.waitForExit(within: .seconds(30)) == 3)
        let log = child.log  // its size and its end only: a failure must not print a megabyte
        #expect(log.utf8.count > 1_048_576)
        #expect(String(log.suffix(5)) == "done\n")
    }

    /// A child that ignores SIGTERM fails the wait at its deadline with the end of its log, and is killed, so that the
    /// test goes on.
    @Test func aChildThatDoesNotEndFailsTheWaitAndIsKilled() async throws {
        let child = try await HeraldProcess(
            ["-c", "trap '' TERM; echo ignoring SIGTERM; exec sleep 600"], executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(await child.waitForOutput(containing: "ignoring SIGTERM"))
        child.kill(SIGTERM)
        let began = ContinuousClock.now
        var status: Int32 = 0
        await withKnownIssue("the wait's deadline passes") {
            status = await child.waitForExit(within: .seconds(1))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined()
            return text.contains("did not exit within") && text.contains("ignoring SIGTERM")
        }
        #expect(status == 128 + SIGKILL)
        // Not the 120 s default deadline: the 1 s one and the kill (bounded loosely, for a busy machine).
        #expect(ContinuousClock.now - began < .seconds(100))
    }
}
