import Foundation
@testable import HeraldCore
@testable import HeraldDelivery
import Testing

@Suite("Backlog pages")
struct BacklogPagesTests {
    let device = UUID()

    @Test func theNextPageIsDueWhenAFullPageWasDeliveredEntirely() {
        var pages = BacklogPages()
        let first = pages.begin(device)
        #expect(first)
        let claimAgain = pages.claimed(3, pageWasFull: true, for: device)
        #expect(!claimAgain)
        let afterOne = pages.finished(device, delivered: true)
        let afterTwo = pages.finished(device, delivered: true)
        let afterThree = pages.finished(device, delivered: true)
        #expect([afterOne, afterTwo, afterThree] == [.nothing, .nothing, .nextPage])
        let next = pages.begin(device)
        #expect(next, "the page is over")
    }

    @Test func anUndeliveredNotificationPausesThePagesAndAShortPageEndsThem() {
        var pages = BacklogPages()
        let first = pages.begin(device)
        #expect(first)
        _ = pages.claimed(2, pageWasFull: true, for: device)
        let undelivered = pages.finished(device, delivered: false)
        let last = pages.finished(device, delivered: true)
        #expect([undelivered, last] == [.nothing, .nextPageLater], "one was not confirmed: the client sets the pace")
        let second = pages.begin(device)
        #expect(second)
        _ = pages.claimed(1, pageWasFull: false, for: device)
        let short = pages.finished(device, delivered: true)
        #expect(short == .nothing, "nothing more was there")
    }

    @Test func aPageWithoutRoomWaitsAndAnEmptyClaimEndsIt() {
        var pages = BacklogPages()
        let first = pages.begin(device)
        #expect(first)
        pages.waitForRoom(device)
        let waiting = pages.takeWaitingForRoom()
        #expect(waiting == [device])
        let waitingAgain = pages.takeWaitingForRoom()
        #expect(waitingAgain.isEmpty)
        let second = pages.begin(device)
        #expect(second)
        let claimAgain = pages.claimed(0, pageWasFull: false, for: device)
        #expect(!claimAgain)
        let third = pages.begin(device)
        #expect(third)
        let other = pages.finished(UUID(), delivered: true)
        #expect(other == .nothing, "not a backlog page")
    }

    /// A client connected (or the device registered again) while a page was out: that page's claim may have been
    /// made before what the client came for was accepted or parked, so the device is claimed again once it ends. The
    /// full suite on a loaded machine once left two parked notifications of a WebSocket-only device undelivered
    /// (WebSocketTests) this way.
    @Test func aClaimAskedForWhileAPageIsOutFollowsIt() {
        var pages = BacklogPages()
        var steps: [Bool] = []
        steps.append(pages.begin(device))
        steps.append(pages.begin(device))  // the page that is out goes on
        steps.append(pages.claimed(2, pageWasFull: false, for: device))
        #expect(steps == [true, false, false])
        let first = pages.finished(device, delivered: true)
        let last = pages.finished(device, delivered: false)
        #expect([first, last] == [.nothing, .nextPage], "a short page, but another claim was asked for")
        steps = [pages.begin(device), pages.claimed(0, pageWasFull: false, for: device)]
        #expect(steps == [true, false], "nothing asked for meanwhile: it ends")
        steps = [pages.begin(device), pages.begin(device), pages.claimed(0, pageWasFull: false, for: device), pages.begin(device)]
        #expect(steps == [true, false, true, true], "an empty page, and another claim was asked for: claim now")
    }
}
