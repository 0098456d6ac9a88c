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
    private var pending: [ObjectIdentifier: (queue: DispatchQueue, work: [@Sendable () -> Void])] = [:]

    /// How many callbacks a queue gets per block: a round sends its first callbacks while it
    /// is still evaluating the rest, so the callback queue works alongside the engine.
    private static let blockSize = 256

    /// The queue the batch is filled on, whose work runs at once.
    private let inline: DispatchQueue

    /// A batch filled on `inline` (the engine's queue).
    init(inline: DispatchQueue) { self.inline = inline }

    /// Adds `work`, to run on `queue` when the batch is sent (or once `queue` has a full
    /// block); work for the queue the batch is filled on runs now.
    func add(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        if queue === inline { return work() }
        let key = ObjectIdentifier(queue)
        pending[key, default: (queue, [])].work.append(work)
        if let entry = pending[key], entry.work.count >= Self.blockSize {
            pending[key] = nil
            let block = entry.work
            queue.async { for item in block { item() } }
        }
    }

    /// Sends each queue its work in one block, and empties the batch.
    func send() {
        for (_, entry) in pending {
            let work = entry.work
            entry.queue.async { for item in work { item() } }
        }
        pending.removeAll()
    }
}
