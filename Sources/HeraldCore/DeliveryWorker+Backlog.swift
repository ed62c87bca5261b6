import Foundation
import Logging
import Synchronization

extension DeliveryWorker {
    /// Delivers a device's pending notifications, due or not, a page at a time: a client of it just connected, or it
    /// registered again. The next page is claimed when every notification of the page was delivered (at the pace of
    /// the client's confirmations); while a page is out, calling this again claims nothing (a client that subscribes
    /// over and over gets no more than one page). A page never fills the ready queue past its limit: without room,
    /// the device waits for the scheduler to find some.
    public func deliverPending(of deviceID: Device.ID) async {
        let room = state.withLock { state -> Int? in
            guard state.backlogs.begin(deviceID) else { return nil }
            let room = min(configuration.backlogPageSize, configuration.readyLimit - state.readyCount)
            if room <= 0 { state.backlogs.waitForRoom(deviceID) }
            return room
        }
        guard let room, room > 0 else { return }
        do {
            let now = clock.now()
            let claimed = try await store.claimPending(
                deviceID: deviceID, lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(configuration.leaseDuration)),
                at: now, limit: room)
            let work = claimed.map { Work(notification: $0, device: nil, isBacklog: true) }
            if work.isEmpty {
                state.withLock { $0.backlogs.claimed(0, pageWasFull: false, for: deviceID) }
            } else {
                enqueue(work) { state, queued in state.backlogs.claimed(queued, pageWasFull: claimed.count == room, for: deviceID) }
            }
        } catch {
            state.withLock { $0.backlogs.claimed(0, pageWasFull: false, for: deviceID) }
            logger.error("Claiming the pending notifications of a device failed", metadata: ["error": "\(error)"])
        }
    }

    /// Claims the next page of a device's backlog, at once or after ``Configuration/backlogPause``.
    func continueBacklog(of deviceID: Device.ID, _ next: BacklogPages.Next) {
        switch next {
        case .nothing:
            return
        case .nextPage:
            Task { await self.deliverPending(of: deviceID) }
        case .nextPageLater:
            Task {
                try? await Task.sleep(for: self.configuration.backlogPause)
                guard !self.state.withLock({ $0.isStopping }) else { return }
                await self.deliverPending(of: deviceID)
            }
        }
    }

    /// Starts the next page of every backlog that waited for room in the ready queue, if there is room now.
    func resumeBacklogsWaitingForRoom() {
        let devices = state.withLock { state -> [Device.ID] in
            guard configuration.readyLimit - state.readyCount >= configuration.backlogPageSize else { return [] }
            return state.backlogs.takeWaitingForRoom()
        }
        for device in devices { Task { await self.deliverPending(of: device) } }
    }
}

/// The backlogs of connected devices being delivered page by page (``DeliveryWorker/deliverPending(of:)``): per
/// device, how many notifications of the page in flight are not finished, and whether the next page is due once
/// they are.
struct BacklogPages {
    private struct Page {
        var unfinished = 0
        /// The claim returned as many as it asked for: more may wait.
        var wasFull = false
        /// Every finished notification of the page was delivered.
        var allDelivered = true
    }

    private var pages: [Device.ID: Page] = [:]
    private var waitingForRoom: Set<Device.ID> = []

    /// Whether a page may be claimed for the device now (none is out); if so, it is out from now on.
    mutating func begin(_ device: Device.ID) -> Bool {
        guard pages[device] == nil else { return false }
        pages[device] = Page()
        return true
    }

    /// The page was claimed with `count` notifications queued (0 ends it).
    mutating func claimed(_ count: Int, pageWasFull: Bool, for device: Device.ID) {
        guard count > 0 else {
            pages[device] = nil
            return
        }
        pages[device] = Page(unfinished: count, wasFull: pageWasFull)
    }

    /// There was no room for the page: it waits (``takeWaitingForRoom()``).
    mutating func waitForRoom(_ device: Device.ID) {
        pages[device] = nil
        waitingForRoom.insert(device)
    }

    mutating func takeWaitingForRoom() -> [Device.ID] {
        defer { waitingForRoom.removeAll() }
        return Array(waitingForRoom)
    }

    /// What follows a page.
    enum Next: Equatable {
        /// Nothing: the page is not over, or it held all there was.
        case nothing
        /// The next page, now: the page was full and every notification of it was delivered.
        case nextPage
        /// The next page after a pause: the page was full, but some of it was not delivered (a client that did not
        /// confirm, a provider that failed); those wait for their retry, and the rest of the backlog is not left to
        /// its expiry.
        case nextPageLater
    }

    /// One notification of the device's page finished; what follows once it was the page's last.
    mutating func finished(_ device: Device.ID, delivered: Bool) -> Next {
        guard var page = pages[device] else { return .nothing }
        page.unfinished -= 1
        page.allDelivered = page.allDelivered && delivered
        guard page.unfinished <= 0 else {
            pages[device] = page
            return .nothing
        }
        pages[device] = nil
        guard page.wasFull else { return .nothing }
        return page.allDelivered ? .nextPage : .nextPageLater
    }
}
