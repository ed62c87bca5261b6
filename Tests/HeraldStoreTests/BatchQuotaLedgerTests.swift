import Foundation
import HeraldCore
@testable import HeraldStore
import HeraldTesting
import Testing

/// The decisions of one batch's accepts, in order, from the counters read once.
@Suite("Batch quota ledger")
struct BatchQuotaLedgerTests {
    private let device = Fixtures.device().device
    private let day = "2025-11-22"

    private func request(_ quota: QuotaRequest) -> AcceptRequest {
        AcceptRequest(notification: Fixtures.notification(for: device), quota: quota)
    }

    private var key: BatchQuotaLedger.Key { .init(deviceID: device.id, day: day) }

    @Test func theAcceptsOfABatchCountAgainstEachOtherAndOneUsesTheQuotaUp() {
        var ledger = BatchQuotaLedger(counters: [key: .init(attempts: 3, successful: 1, total: 1)], pending: [:])
        let decisions = (0..<4).map { _ in ledger.decide(request(QuotaRequest(day: day, maximum: 3))) }
        #expect(
            decisions == [
                .accepted(QuotaCounters(attempts: 4, successful: 2, total: 2), usedUpQuota: false),
                .accepted(QuotaCounters(attempts: 5, successful: 3, total: 3), usedUpQuota: true),
                .quotaExceeded(QuotaCounters(attempts: 6, successful: 3, total: 3)),
                .quotaExceeded(QuotaCounters(attempts: 7, successful: 3, total: 3)),
            ])
        #expect(ledger.counters[key]?.limitAnnounced == true)
        #expect(ledger.changed == [key])
    }

    @Test func aQuotaAnnouncedBeforeIsNotAnnouncedAgain() {
        var ledger = BatchQuotaLedger(counters: [key: .init(successful: 2, total: 2, limitAnnounced: true)], pending: [:])
        let decision = ledger.decide(request(QuotaRequest(day: day, maximum: 3)))
        #expect(decision == .accepted(QuotaCounters(attempts: 1, successful: 3, total: 3), usedUpQuota: false))
    }

    @Test func theBacklogCountsTheNotificationsAcceptedEarlierInTheBatch() {
        var ledger = BatchQuotaLedger(counters: [key: .init()], pending: [device.id: 1])
        let quota = QuotaRequest(day: day, maximum: nil, pendingMaximum: 3)
        let decisions = (0..<3).map { _ in ledger.decide(request(quota)) }
        #expect(
            decisions == [
                .accepted(QuotaCounters(attempts: 1), usedUpQuota: false), .accepted(QuotaCounters(attempts: 2), usedUpQuota: false),
                .backlogFull(QuotaCounters(attempts: 3)),
            ])
    }

    @Test func exemptNotificationsHaveACapOfTheirOwn() {
        var ledger = BatchQuotaLedger(counters: [key: .init(exempt: 1)], pending: [:])
        let quota = QuotaRequest(day: day, maximum: nil, countsAttempt: false, exemptMaximum: 2)
        #expect(ledger.decide(request(quota)) == .accepted(QuotaCounters(), usedUpQuota: false))
        #expect(ledger.decide(request(quota)) == .exemptQuotaExceeded(QuotaCounters()))
        #expect(ledger.counters[key]?.exempt == 2)
    }

    @Test func aReleaseMovesTheQuotaToErrorsAndNeverBelowZero() {
        var ledger = BatchQuotaLedger(counters: [key: .init(successful: 1, total: 1)], pending: [:])
        ledger.release(key)
        ledger.release(key)
        #expect(ledger.counters[key] == .init(successful: 0, errors: 2, total: 1))
        ledger.release(.init(deviceID: UUID(), day: day))
        #expect(ledger.changed == [key])
    }
}
