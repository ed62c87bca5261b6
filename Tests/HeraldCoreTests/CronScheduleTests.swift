import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Issue 39, section 5: the cron parser and the next-fire computation, pure, with a test clock.
@Suite("Cron schedules")
struct CronScheduleTests {
    static func utc(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    static func schedule(_ expression: String, _ zone: String) throws -> CronSchedule {
        CronSchedule(expression: try CronExpression(expression), timeZone: try #require(TimeZone(identifier: zone)))
    }

    /// The next `count` fires after the clock's time.
    static func fires(_ schedule: CronSchedule, from clock: TestClock, count: Int) -> [Date] {
        var fires: [Date] = []
        var after = clock.now()
        while fires.count < count, let next = schedule.nextFire(after: after) {
            fires.append(next)
            after = next
        }
        return fires
    }

    @Test func parsesFieldsListsRangesStepsAndNames() throws {
        let expression = try CronExpression("*/15 9-17/4 1,15 JAN-mar mon-FRI")
        #expect(expression.minutes == [0, 15, 30, 45])
        #expect(expression.hours == [9, 13, 17])
        #expect(expression.daysOfMonth == [1, 15])
        #expect(expression.months == [1, 2, 3])
        #expect(expression.daysOfWeek == [1, 2, 3, 4, 5])
        #expect(try CronExpression("0 0 * * 7").daysOfWeek == [0])
        #expect(try CronExpression("5/20 * * * *").minutes == [5, 25, 45])
    }

    @Test(arguments: [
        "", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 13 *", "* * * * 8",
        "*/0 * * * *", "5-1 * * * *", "a * * * *", ",5 * * * *", "1,,2 * * * *", "-1 * * * *", "0 0 30 2 *", "* * * FOO *",
        "99999999999999999999 * * * *",
    ])
    func refusesWhatIsNotAFiveFieldExpression(_ text: String) {
        #expect(throws: CronExpression.ParseError.self) { try CronExpression(text) }
    }

    @Test func theShortestIntervalIsWithinAnHourAndAcrossHours() throws {
        #expect(try CronExpression("0 7 * * *").shortestInterval == 1_440)
        #expect(try CronExpression("*/15 * * * *").shortestInterval == 15)
        #expect(try CronExpression("0,10 * * * *").shortestInterval == 10)
        #expect(try CronExpression("0,50 * * * *").shortestInterval == 10)  // 00:50 then 01:00
        #expect(try CronExpression("0,50 3 * * *").shortestInterval == 50)
        #expect(try CronExpression("55 23,0 * * *").shortestInterval == 60)
        #expect(try CronExpression("0 * * * *").shortestInterval == 60)
    }

    @Test func firesOnWeekdaysAtSevenInTheGivenZone() throws {
        let clock = TestClock(Self.utc("2026-06-05T12:00:00Z"))  // a Friday
        let fires = Self.fires(try Self.schedule("0 7 * * MON-FRI", "Europe/Berlin"), from: clock, count: 3)
        // 07:00 CEST is 05:00 UTC: Monday, Tuesday, Wednesday.
        #expect(fires == ["2026-06-08T05:00:00Z", "2026-06-09T05:00:00Z", "2026-06-10T05:00:00Z"].map(Self.utc))
    }

    @Test func eitherDayFieldMatchesWhenBothAreRestricted() throws {
        let clock = TestClock(Self.utc("2026-06-01T00:30:00Z"))  // a Monday
        let fires = Self.fires(try Self.schedule("0 0 13 * FRI", "UTC"), from: clock, count: 3)
        #expect(fires == ["2026-06-05T00:00:00Z", "2026-06-12T00:00:00Z", "2026-06-13T00:00:00Z"].map(Self.utc))
    }

    /// 8 March 2026 in New York: clocks go from 02:00 EST to 03:00 EDT. 02:30 does not exist that day.
    @Test func aTimeInTheSpringForwardGapFiresOnceShiftedByTheGap() throws {
        let clock = TestClock(Self.utc("2026-03-07T12:00:00Z"))
        let fires = Self.fires(try Self.schedule("30 2 * * *", "America/New_York"), from: clock, count: 3)
        #expect(fires == [
            Self.utc("2026-03-08T07:30:00Z"),  // 03:30 EDT: 02:30 shifted by the hour the clocks skipped
            Self.utc("2026-03-09T06:30:00Z"),  // 02:30 EDT
            Self.utc("2026-03-10T06:30:00Z"),
        ])
        // The day before, 02:30 EST.
        clock.set(Self.utc("2026-03-06T12:00:00Z"))
        #expect(Self.fires(try Self.schedule("30 2 * * *", "America/New_York"), from: clock, count: 1) == [Self.utc("2026-03-07T07:30:00Z")])
        // Naming the shifted time too still sends once.
        clock.set(Self.utc("2026-03-08T06:00:00Z"))
        let both = Self.fires(try Self.schedule("30 2,3 * * *", "America/New_York"), from: clock, count: 2)
        #expect(both == ["2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"].map(Self.utc))
    }

    /// 1 November 2026 in New York: clocks go from 02:00 EDT back to 01:00 EST. 01:30 happens twice.
    @Test func aTimeThatRepeatsOnAFallBackDayFiresOnceAtItsFirstOccurrence() throws {
        let clock = TestClock(Self.utc("2026-10-31T12:00:00Z"))
        let fires = Self.fires(try Self.schedule("30 1 * * *", "America/New_York"), from: clock, count: 3)
        #expect(fires == [
            Self.utc("2026-11-01T05:30:00Z"),  // 01:30 EDT, the first occurrence; not 06:30Z (01:30 EST)
            Self.utc("2026-11-02T06:30:00Z"),  // 01:30 EST
            Self.utc("2026-11-03T06:30:00Z"),
        ])
        // Between the two occurrences, the next fire is the next day's.
        clock.set(Self.utc("2026-11-01T06:00:00Z"))
        #expect(Self.fires(try Self.schedule("30 1 * * *", "America/New_York"), from: clock, count: 1) == [Self.utc("2026-11-02T06:30:00Z")])
    }

    @Test func theTwentyNinthOfFebruaryAndNeverAgain() throws {
        let clock = TestClock(Self.utc("2026-03-01T00:00:00Z"))
        #expect(Self.fires(try Self.schedule("0 12 29 2 *", "UTC"), from: clock, count: 1) == [Self.utc("2028-02-29T12:00:00Z")])
        // 31 April never comes, but April is not the only month: 31 March does.
        #expect(Self.fires(try Self.schedule("0 0 31 3,4 *", "UTC"), from: clock, count: 1) == [Self.utc("2026-03-31T00:00:00Z")])
    }

    @Test func aHalfHourZoneAndTheDateLine() throws {
        let clock = TestClock(Self.utc("2026-01-01T00:00:00Z"))
        #expect(Self.fires(try Self.schedule("0 9 * * *", "Asia/Kolkata"), from: clock, count: 1) == [Self.utc("2026-01-01T03:30:00Z")])
        #expect(Self.fires(try Self.schedule("0 9 * * *", "Pacific/Kiritimati"), from: clock, count: 1) == [Self.utc("2026-01-01T19:00:00Z")])
    }
}
