import Foundation
import HummingbirdWSClient
import Logging
import Synchronization

/// Many open WebSocket subscribers (docs/websocket.md): each connects to `/api/push/websocket`, subscribes with
/// its device's credentials, waits for the `result`, and then stays connected until ``close()``.
final class WebSocketSubscribers: Sendable {
    private let subscribed = Atomic(0)
    private let failed = Atomic(0)
    private let firstFailure = Mutex<String?>(nil)
    private let gate = Gate()
    private let connections = Mutex<Task<Void, Never>?>(nil)

    var subscribedCount: Int { subscribed.load(ordering: .relaxed) }
    var failedCount: Int { failed.load(ordering: .relaxed) }
    var failure: String? { firstFailure.withLock { $0 } }

    /// Opens one subscriber per device, at most `connecting` handshakes at a time; returns when every one has
    /// subscribed or failed, or after `timeout`.
    func open(port: Int, devices: [DeviceIdentity], connecting: Int, timeout: Duration) async {
        let logger = {
            var logger = Logger(label: "bench-ws")
            logger.logLevel = .critical
            return logger
        }()
        let url = "ws://127.0.0.1:\(port)/api/push/websocket"
        let task = Task { [self] in
            await withDiscardingTaskGroup { group in
                for (index, device) in devices.enumerated() {
                    // Keep at most `connecting` handshakes in flight.
                    while index - subscribed.load(ordering: .relaxed) - failed.load(ordering: .relaxed) >= connecting {
                        try? await Task.sleep(for: .milliseconds(2))
                        if Task.isCancelled { return }
                    }
                    group.addTask { await self.subscriber(url: url, device: device, logger: logger) }
                }
            }
        }
        connections.withLock { $0 = task }
        let deadline = ContinuousClock.now + timeout
        while subscribedCount + failedCount < devices.count, ContinuousClock.now < deadline {
            Progress.shared.status(
                "WebSocket subscribers: \(Format.grouped(Double(subscribedCount))) subscribed, \(failedCount) failed")
            try? await Task.sleep(for: .milliseconds(100))
        }
        Progress.shared.endStatus()
    }

    /// Closes every connection and waits (at most `timeout`) until they are closed.
    func close(timeout: Duration = .seconds(30)) async {
        gate.open()
        guard let task = connections.withLock({ $0 }) else { return }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            task.cancel()
        }
        await task.value
        timer.cancel()
    }

    private func subscriber(url: String, device: DeviceIdentity, logger: Logger) async {
        let message =
            #"{"id":1,"type":"push_notification_channel","user_id":"\#(device.userID)","#
            + #""device_secret":"\#(device.secret)","support_confirm":true}"#
        let didSubscribe = SharedFlag()
        do {
            try await WebSocketClient.connect(url: url, logger: logger) { [self] inbound, outbound, _ in
                try await outbound.write(.text(message))
                var messages = inbound.messages(maxSize: 1 << 16).makeAsyncIterator()
                guard case .text(let text)? = try await messages.next(), text.contains(#""success":true"#) else {
                    fail("subscription refused")
                    return
                }
                didSubscribe.value.store(true, ordering: .relaxed)
                subscribed.add(1, ordering: .relaxed)
                await gate.wait()
            }
        } catch {
            if !didSubscribe.value.load(ordering: .relaxed) { fail("\(error)") }
        }
    }

    private func fail(_ description: String) {
        failed.add(1, ordering: .relaxed)
        firstFailure.withLock { $0 = $0 ?? description }
    }
}

/// Suspends its waiters until it is opened.
final class Gate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A flag that escaping closures can share.
final class SharedFlag: Sendable {
    let value = Atomic(false)
}
