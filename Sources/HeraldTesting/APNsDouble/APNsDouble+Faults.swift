import Foundation
import HeraldCore

extension APNsDouble {
    /// Something the double does instead of its normal answer to a request that passed validation.
    public enum Fault: Sendable, Equatable {
        /// Answer with this status and `{"reason": reason}` (any pair, including unknown reasons).
        case respond(status: Int, reason: String)
        /// Accept the stream and never answer it (for timeout tests).
        case stall
        /// Close the TCP connection at once, without TLS close_notify or GOAWAY.
        case dropConnection
        /// Send GOAWAY (`NO_ERROR`, debug data `{"reason": reason}`) whose last stream id excludes this request,
        /// without answering it, then close the connection.
        case goAway(reason: String)
    }

    /// A per-device-token state, checked in Apple's order among the validations.
    public enum DeviceTokenMark: Sendable, Equatable {
        /// `410 Unregistered` with `timestamp` = `since` in milliseconds.
        case unregistered(since: Date)
        /// `410 ExpiredToken` with `timestamp` = `since` in milliseconds.
        case expired(since: Date)
        /// `400 BadDeviceToken` (e.g. a sandbox token sent to production).
        case badDeviceToken
    }

    /// Queues `fault` for the next `count` requests that pass validation (faults are used first in, first out).
    public func inject(_ fault: Fault, count: Int = 1) {
        core.inject(fault, count: count)
    }

    /// The next `count` valid requests are answered with `status` and `reason`, e.g. `(500, "InternalServerError")`.
    public func failNext(_ count: Int = 1, status: Int, reason: String) {
        inject(.respond(status: status, reason: reason), count: count)
    }

    /// The next `count` valid requests are never answered.
    public func stallNext(_ count: Int = 1) {
        inject(.stall, count: count)
    }

    /// The next valid request makes the double close its TCP connection.
    public func dropConnectionOnNextRequest() {
        inject(.dropConnection)
    }

    /// The next valid request is not answered; the double sends GOAWAY with `{"reason": reason}` and closes.
    public func sendGoAwayOnNextRequest(reason: String = "Shutdown") {
        inject(.goAway(reason: reason))
    }

    /// Drops every queued fault.
    public func clearFaults() {
        core.clearFaults()
    }

    /// Delays every answer by `delay` (`nil` for none).
    public func setResponseDelay(_ delay: Duration?) {
        core.setResponseDelay(delay)
    }

    /// Marks a device token: `410 Unregistered` from now on, with `since` (default: the double's clock) as `timestamp`.
    public func markUnregistered(_ deviceToken: String, since: Date? = nil) {
        core.mark(deviceToken, as: .unregistered(since: since ?? clock.now()))
    }

    /// Marks a device token: `410 ExpiredToken` from now on.
    public func markExpired(_ deviceToken: String, since: Date? = nil) {
        core.mark(deviceToken, as: .expired(since: since ?? clock.now()))
    }

    /// Marks a device token: `400 BadDeviceToken` from now on.
    public func markBadDeviceToken(_ deviceToken: String) {
        core.mark(deviceToken, as: .badDeviceToken)
    }

    /// Removes a device token's mark.
    public func unmark(_ deviceToken: String) {
        core.mark(deviceToken, as: nil)
    }
}
