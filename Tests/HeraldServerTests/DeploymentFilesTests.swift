import Foundation
import Subprocess
import SystemPackage
import Testing

/// Issue 13, item 4: the systemd unit in deploy/ is valid (`systemd-analyze verify`, where systemd is installed; the
/// Dockerfile's build command is run by `.ci/run`).
@Suite("Deployment files")
struct DeploymentFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let systemdAnalyze = "/usr/bin/systemd-analyze"

    @Test(
        "deploy/herald.service passes systemd-analyze verify with the built herald as its ExecStart",
        .enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze), "systemd-analyze is not installed"))
    func theSystemdUnitVerifies() async throws {
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/herald.service"), encoding: .utf8)
        #expect(unit.contains("DynamicUser=yes"))
        #expect(unit.contains("ProtectSystem=strict"))
        #expect(unit.contains("StateDirectory=herald"))
        // The unit names the installed path; the test points it at the binary it just built.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("herald.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/herald", with: try await HeraldProcess.binary().path)
            .write(to: copy, atomically: true, encoding: .utf8)

        let verify = try await Subprocess.run(
            .path(FilePath(Self.systemdAnalyze)), arguments: ["verify", copy.path], output: .string(limit: 1 << 20),
            error: .combinedWithOutput)
        let text = verify.standardOutput
        #expect(verify.terminationStatus.isSuccess, "\(text)")
        #expect(!text.contains("herald.service"), "systemd-analyze complained:\n\(text)")
    }

    @Test("The Dockerfile builds the way CI builds, runs as an unprivileged user and checks /readyz")
    func theDockerfileSaysWhatCIChecks() throws {
        let dockerfile = try String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        let ci = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        let build = "swift build -c release --static-swift-stdlib --product herald"
        #expect(dockerfile.contains(build))
        #expect(ci.contains(build))
        #expect(dockerfile.contains("USER herald"))
        #expect(dockerfile.contains("HEALTHCHECK") && dockerfile.contains("/readyz"))
        #expect(dockerfile.contains("VOLUME /var/lib/herald"))
    }
}
