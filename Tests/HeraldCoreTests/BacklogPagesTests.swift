import Foundation
@testable import HeraldCore
import Testing

@Suite("Backlog pages")
struct BacklogPagesTests {
    let device = UUID()

    @Test func theNextPageIsDueWhenAFullPageWasDeliveredEntirely() {
        var pages = BacklogPages()
        let result1 = pages.begin(device)
        #expect(result1)
        let result2 = pages.begin(device)
        #expect(!result2, "a second subscribe while a page is out claims nothing")
        pages.claimed(3, pageWasFull: true, for: device)
        let result3 = pages.finished(device, delivered: true)
        #expect(!result3)
        let result4 = pages.finished(device, delivered: true)
        #expect(!result4)
        let result5 = pages.finished(device, delivered: true)
        #expect(result5)
        let result6 = pages.begin(device)
        #expect(result6, "the page is over")
    }

    @Test func noNextPageAfterAnUndeliveredNotificationOrAShortPage() {
        var pages = BacklogPages()
        let result7 = pages.begin(device)
        #expect(result7)
        pages.claimed(2, pageWasFull: true, for: device)
        let result8 = pages.finished(device, delivered: false)
        #expect(!result8)
        let result9 = pages.finished(device, delivered: true)
        #expect(!result9, "one was not confirmed: the client sets the pace")
        let result10 = pages.begin(device)
        #expect(result10)
        pages.claimed(1, pageWasFull: false, for: device)
        let result11 = pages.finished(device, delivered: true)
        #expect(!result11, "nothing more was there")
    }

    @Test func aPageWithoutRoomWaitsAndAnEmptyClaimEndsIt() {
        var pages = BacklogPages()
        let result12 = pages.begin(device)
        #expect(result12)
        pages.waitForRoom(device)
        let waiting = pages.takeWaitingForRoom()
        #expect(waiting == [device])
        let waitingAgain = pages.takeWaitingForRoom()
        #expect(waitingAgain.isEmpty)
        let result13 = pages.begin(device)
        #expect(result13)
        pages.claimed(0, pageWasFull: false, for: device)
        let result14 = pages.begin(device)
        #expect(result14)
        let other = pages.finished(UUID(), delivered: true)
        #expect(!other, "not a backlog page")
    }
}
