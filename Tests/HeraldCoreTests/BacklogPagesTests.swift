import Foundation
@testable import HeraldCore
import Testing

@Suite("Backlog pages")
struct BacklogPagesTests {
    let device = UUID()

    @Test func theNextPageIsDueWhenAFullPageWasDeliveredEntirely() {
        var pages = BacklogPages()
        let first = pages.begin(device)
        #expect(first)
        let again = pages.begin(device)
        #expect(!again, "a second subscribe while a page is out claims nothing")
        pages.claimed(3, pageWasFull: true, for: device)
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
        pages.claimed(2, pageWasFull: true, for: device)
        let undelivered = pages.finished(device, delivered: false)
        let last = pages.finished(device, delivered: true)
        #expect([undelivered, last] == [.nothing, .nextPageLater], "one was not confirmed: the client sets the pace")
        let second = pages.begin(device)
        #expect(second)
        pages.claimed(1, pageWasFull: false, for: device)
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
        pages.claimed(0, pageWasFull: false, for: device)
        let third = pages.begin(device)
        #expect(third)
        let other = pages.finished(UUID(), delivered: true)
        #expect(other == .nothing, "not a backlog page")
    }
}
