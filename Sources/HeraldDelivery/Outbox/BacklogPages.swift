import Foundation
import HeraldCore

/// The backlogs of connected devices being delivered page by page (``OutboxScheduler/deliverPending(of:)``): per
/// device, how many notifications of the page in flight are not finished, and whether the next page is due once
/// they are.
struct BacklogPages {
    private struct Page {
        var unfinished = 0
        /// The claim returned as many as it asked for: more may wait.
        var wasFull = false
        /// Every finished notification of the page was delivered.
        var allDelivered = true
        /// Another claim was asked for while this page was out (a client connected again, the device registered
        /// again): what was accepted meanwhile, or parked before the client connected, is claimed once the page ends.
        var claimAgain = false
    }

    private var pages: [Device.ID: Page] = [:]
    private var waitingForRoom: Set<Device.ID> = []

    /// Whether a page may be claimed for the device now (none is out); if so, it is out from now on. When one is out,
    /// the device is claimed again once it ends (``claimed(_:pageWasFull:for:)``, ``finished(_:delivered:)``): the
    /// claim that is out may have been made before what this call is for.
    mutating func begin(_ device: Device.ID) -> Bool {
        guard pages[device] == nil else {
            pages[device]?.claimAgain = true
            return false
        }
        pages[device] = Page()
        return true
    }

    /// The page was claimed with `count` notifications queued (0 ends it). Returns whether the device is to be
    /// claimed again now (the page ended empty, and another claim was asked for meanwhile).
    mutating func claimed(_ count: Int, pageWasFull: Bool, for device: Device.ID) -> Bool {
        let claimAgain = pages[device]?.claimAgain ?? false
        guard count > 0 else {
            pages[device] = nil
            return claimAgain
        }
        pages[device] = Page(unfinished: count, wasFull: pageWasFull, claimAgain: claimAgain)
        return false
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
        if page.claimAgain { return .nextPage }
        guard page.wasFull else { return .nothing }
        return page.allDelivered ? .nextPage : .nextPageLater
    }
}
