import Foundation
import HeraldCore
import Logging
import Synchronization

extension OutboxScheduler {
    /// Delivers a device's pending notifications, due or not, a page at a time: a client of it just connected, or it
    /// registered again. The next page is claimed when every notification of the page was delivered (at the pace of
    /// the client's confirmations); while a page is out, calling this again claims nothing (a client that subscribes
    /// over and over gets no more than one page). A page never fills the ready queue past its limit: without room,
    /// the device waits for the scheduler to find some.
    func deliverPending(of deviceID: Device.ID) async {
        let room = min(configuration.backlogPageSize, pool.room)
        let begins = state.withLock { state -> Bool in
            state.noteWoken(deviceID, at: .now, keepingFor: configuration.leaseDuration)
            guard state.backlogs.begin(deviceID) else { return false }
            if room <= 0 { state.backlogs.waitForRoom(deviceID) }
            return true
        }
        guard begins, room > 0 else { return }
        do {
            let now = clock.now()
            let claimed = try await store.claimPending(
                deviceID: deviceID,
                lease: Lease(owner: instanceID, expiresAt: now.addingTimeInterval(configuration.leaseDuration)),
                at: now, limit: room)
            // The page's count is recorded before a slot can finish one of its notifications.
            let (work, afterRelease) = pool.takeCustody(claimed.map { DeliveryWork(notification: $0, isBacklog: true) })
            let claimAgain = state.withLock {
                $0.backlogs.claimed(work.count + afterRelease, pageWasFull: claimed.count == room, for: deviceID)
            }
            pool.queue(work)
            if claimAgain { Task { await self.deliverPending(of: deviceID) } }
        } catch {
            _ = state.withLock { $0.backlogs.claimed(0, pageWasFull: false, for: deviceID) }
            logger.error("Claiming the pending notifications of a device failed", metadata: ["error": "\(error)"])
        }
    }

    /// Claims the next page of a device's backlog, at once or after ``DeliveryEngine/Configuration/backlogPause``.
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
        guard pool.room >= configuration.backlogPageSize else { return }
        let devices = state.withLock { $0.backlogs.takeWaitingForRoom() }
        for device in devices { Task { await self.deliverPending(of: device) } }
    }
}

extension OutboxScheduler.State {
    /// Records that `deviceID` was woken; forgets wakes older than an attempt can last (its lease), so that the map
    /// holds only the devices woken lately.
    mutating func noteWoken(_ deviceID: Device.ID, at now: ContinuousClock.Instant, keepingFor lease: TimeInterval) {
        if wokenAt.count >= 1_024 {
            let horizon = now - .milliseconds(Int64(min(lease, 86_400) * 1_000))
            wokenAt = wokenAt.filter { $0.value >= horizon }
        }
        wokenAt[deviceID] = now
    }
}
