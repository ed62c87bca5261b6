import Foundation
import HeraldCore
import Testing

/// Issue 13, item 1: the `herald` binary runs with nothing beside it (its OpenAPI document and the dashboard's
/// templates and stylesheet are compiled in, there is no resource bundle to look for).
@Suite("Self-contained binary")
struct SelfContainedBinaryTests {
    @Test("herald copied alone into an empty folder serves /openapi.yaml from there, and says its version")
    func theBinaryRunsFromAnEmptyFolder() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("herald")
        try FileManager.default.copyItem(at: try await HeraldProcess.binary(), to: copy)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["herald"])

        let version = try await HeraldProcess(["--version"], executable: copy, directory: folder)
        #expect(await version.waitForExit() == 0)
        #expect(await version.waitForOutput(containing: HeraldVersion.current, within: 5))

        // The default store: ./herald.sqlite, in the folder.
        let herald = try await HeraldProcess(
            ["serve"],
            environment: HeraldProcess.inheritedEnvironment([
                "HERALD_HOST": "127.0.0.1", "HERALD_PORT": "0", "HERALD_ADMIN_TOKEN": "a-token-for-the-dashboard",
            ]),
            executable: copy, directory: folder)
        let port = try await herald.port()
        let connection = try RawConnection(port: port)
        connection.send("GET /openapi.yaml HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
        let answer = try #require(RawAnswer.all(in: await connection.readUntilClosed().bytes).first)
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"]?.hasPrefix("application/yaml") == true)
        #expect(answer.body.hasPrefix("openapi: 3.1.0"))
        for (path, type, start) in [
            ("/admin/login", "text/html", "<!doctype html>"), ("/admin/style.css", "text/css", "/* Herald's operator dashboard"),
        ] {
            let page = try RawConnection(port: port)
            page.send("GET \(path) HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
            let served = try #require(RawAnswer.all(in: await page.readUntilClosed().bytes).first)
            #expect(served.status == 200, "\(path)")
            #expect(served.headers["content-type"]?.hasPrefix(type) == true, "\(path)")
            #expect(served.body.hasPrefix(start), "\(path)")
        }
        herald.kill(SIGTERM)
        #expect(await herald.waitForExit() == 0)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("herald.sqlite").path))
    }
}
