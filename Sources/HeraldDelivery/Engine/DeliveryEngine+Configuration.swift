import Foundation
import HeraldCore

extension DeliveryEngine {
    /// Tuning of the engine.
    public struct Configuration: Sendable {
        /// Deliveries in flight at once, at most.
        public var maximumConcurrentDeliveries: Int
        public var retryPolicy: RetryPolicy
        /// How long a claim holds a notification; renewed every third of it while the attempt runs.
        public var leaseDuration: TimeInterval
        /// How often the scheduler looks at its timer queue (the resolution of retry times).
        public var tick: Duration
        /// How often the timer queue is refilled from the store even when it is not low (finds expired leases).
        public var refillInterval: Duration
        /// Entries the timer queue holds in memory; the rest wait in the store.
        public var scheduleCapacity: Int
        /// How long a send request waits for the first attempt.
        public var deliveryWait: Duration
        /// A notification handed to the instance where its device's WebSocket client is connected is due again here
        /// after this long, in case that instance did not take it (it died, or the client left).
        public var handOverTimeout: TimeInterval
        /// The longest a delivery outcome that nobody waits for holds back to be committed with the next accept.
        public var outcomeCommitDelay: Duration
        /// This instance's name in leases; unique per process unless set. An instance that restarts under the same
        /// name takes back its own leases at once (they belong to its dead predecessor); under another name it waits
        /// for them to expire.
        public var instanceID: String?
        /// How long an accept or a status read waits for the group commit, at most (`HERALD_STORE_TIMEOUT_MS`);
        /// `nil`: as long as the store takes.
        public var storeTimeout: Duration?

        public init(
            maximumConcurrentDeliveries: Int = 1_024, retryPolicy: RetryPolicy = .init(), leaseDuration: TimeInterval = 30,
            tick: Duration = .milliseconds(100), refillInterval: Duration = .seconds(5), scheduleCapacity: Int = 50_000,
            deliveryWait: Duration = .milliseconds(500), handOverTimeout: TimeInterval = 15,
            outcomeCommitDelay: Duration = GroupCommit.defaultPatience.maximumDelay, instanceID: String? = nil,
            storeTimeout: Duration? = nil
        ) {
            self.storeTimeout = storeTimeout
            self.maximumConcurrentDeliveries = maximumConcurrentDeliveries
            self.retryPolicy = retryPolicy
            self.leaseDuration = leaseDuration
            self.tick = tick
            self.refillInterval = refillInterval
            self.scheduleCapacity = scheduleCapacity
            self.deliveryWait = deliveryWait
            self.handOverTimeout = handOverTimeout
            self.outcomeCommitDelay = outcomeCommitDelay
            self.instanceID = instanceID
        }

        /// Fresh notifications waiting for a slot beyond this are stored unleased and scheduled instead.
        var readyLimit: Int { maximumConcurrentDeliveries * 4 }

        /// Slots that wait for work all the time; the rest of `maximumConcurrentDeliveries` are started on demand.
        var residentSlots: Int { min(maximumConcurrentDeliveries, 64) }

        /// Places in the ready queue one device's fresh notifications may take (the rest go to the timer queue).
        var readyPerDevice: Int { max(1, readyLimit / 64) }

        /// Due attempts taken from the timer queue and waiting to be claimed in turn per device, at most.
        var dueQueueCapacity: Int { max(readyLimit, 512) }

        /// A connected device's backlog is claimed this many at a time, the next page once all of these were
        /// delivered (below the WebSocket channel's queue of 64 unwritten events per socket).
        var backlogPageSize: Int { 32 }

        /// After a backlog page of which some was not delivered, the pause before the next page.
        var backlogPause: Duration { .seconds(5) }

        /// The slot pool's limits.
        var slotLimits: SlotPool.Limits {
            SlotPool.Limits(
                maximumSlots: maximumConcurrentDeliveries, residentSlots: residentSlots, readyLimit: readyLimit,
                readyPerDevice: readyPerDevice)
        }
    }
}
