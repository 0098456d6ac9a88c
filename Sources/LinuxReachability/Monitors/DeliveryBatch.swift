import Dispatch

/// The deliveries of one evaluation round, gathered per callback queue and sent to each queue
/// in blocks.
///
/// When a default route changes under 10 000 monitors, each monitor's callback must run on
/// its own queue; one `DispatchQueue.async` per monitor cost a block, a queue push and often a
/// thread wake-up each. Gathered here, a round costs one `async` per queue and block, and the
/// callbacks of one queue still run in the order the engine produced them.
///
/// Work for the engine's own queue (monitors that deliver inside the round) runs at once, in
/// the round: the batch is only filled on that queue.
final class DeliveryBatch: @unchecked Sendable {
    // @unchecked Sendable: a batch is created, filled and sent by one evaluation round on the
    // engine's serial queue; the blocks it sends only read what they were given.
    private var pending: [ObjectIdentifier: (queue: DispatchQueue, deliveries: [Delivery])] = [:]
    /// The queue that the last delivery was for, and its deliveries, held outside `pending`:
    /// 10 000 monitors on one queue then cost no hash lookup each.
    private var currentQueue: DispatchQueue?
    private var currentDeliveries: [Delivery] = []

    /// One answer for one recipient. A plain value in the queue's block rather than a closure
    /// per delivery: for 10 000 monitors that is 10 000 fewer allocations on the engine's
    /// thread, each of which the callback queue's thread would otherwise free.
    private struct Delivery: @unchecked Sendable {
        // @unchecked Sendable: the recipient is Sendable; a weak reference to it is read once,
        // on the callback queue.
        weak var recipient: (any BatchedAnswerRecipient)?
        let answer: ReachabilityAnswer
        let generation: Int

        func run() { recipient?.deliverBatched(answer, generation: generation) }
    }

    /// How many callbacks a queue gets per block: a round sends its first callbacks while it
    /// is still evaluating the rest, so the callback queue works alongside the engine.
    static let blockSize = 256

    /// The queue the batch is filled on, whose work runs at once.
    private let inline: DispatchQueue

    /// A batch filled on `inline` (the engine's queue).
    init(inline: DispatchQueue) { self.inline = inline }

    /// Adds the delivery of `answer` to `recipient` (held weakly until then), to run on `queue`
    /// when the batch is sent (or once `queue` has a full block); a delivery for the queue the
    /// batch is filled on runs now.
    func add(_ answer: ReachabilityAnswer, generation: Int, to recipient: some BatchedAnswerRecipient,
             on queue: DispatchQueue) {
        if queue === inline { return recipient.deliverBatched(answer, generation: generation) }
        if queue !== currentQueue { makeCurrent(queue) }
        if let block = Self.append(Delivery(recipient: recipient, answer: answer, generation: generation), to: &currentDeliveries) {
            queue.async { for delivery in block { delivery.run() } }
        }
    }

    /// Puts the current queue's deliveries back in `pending` and takes `queue`'s out (its
    /// order kept), or none.
    private func makeCurrent(_ queue: DispatchQueue?) {
        if let previous = currentQueue {
            pending[ObjectIdentifier(previous)] = (previous, currentDeliveries)
        }
        currentDeliveries = queue.flatMap { pending.removeValue(forKey: ObjectIdentifier($0))?.deliveries } ?? []
        currentQueue = queue
    }

    /// Appends `delivery` in place; returns the full block, leaving `deliveries` empty. The
    /// delivery is consumed, moved into the block: a borrowed one was copied in (its weak
    /// reference registered with the runtime once more) and the original then destroyed.
    private static func append(_ delivery: consuming Delivery, to deliveries: inout [Delivery]) -> [Delivery]? {
        if deliveries.isEmpty { deliveries.reserveCapacity(blockSize) }
        deliveries.append(delivery)
        guard deliveries.count >= blockSize else { return nil }
        defer { deliveries = [] }
        return deliveries
    }

    /// Sends each queue its deliveries in one block, and empties the batch.
    func send() {
        makeCurrent(nil)
        for (_, entry) in pending where !entry.deliveries.isEmpty {
            let block = entry.deliveries
            entry.queue.async { for delivery in block { delivery.run() } }
        }
        pending.removeAll()
    }
}

/// What a ``DeliveryBatch`` delivers answers to (a ``ReachabilityMonitor`` monitor).
protocol BatchedAnswerRecipient: AnyObject, Sendable {
    /// Takes `answer`, evaluated for the watch opened as `generation`, on the callback queue.
    func deliverBatched(_ answer: ReachabilityAnswer, generation: Int)
}
