/// Polls `condition` every 50 ms until it holds or `attempts` run out; returns whether it held.
/// (Waiting for something that runs on its own schedule: the delivery engine, a double's event loop; nothing is
/// asserted about how long it took.)
public func eventually(attempts: Int = 400, _ condition: () async throws -> Bool) async rethrows -> Bool {
    for _ in 0..<attempts {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return false
}
