import Dispatch
import Netlink
@testable import LinuxReachability
import Testing

/// A `DeliveryBatch` gathers a round's callbacks per queue and sends them in blocks. Each
/// queue's recipients must get every delivery, in the order the round made them, however the
/// queues interleave and wherever the blocks end; a delivery for the round's own queue runs at
/// once, and a recipient released before its block runs gets nothing.
@Suite("Delivery batches")
struct DeliveryBatchTests {
    /// Records the generations it is given, in order.
    private final class Recorder: BatchedAnswerRecipient {
        let received = Locked<[Int]>([])
        func deliverBatched(_ answer: ReachabilityAnswer, generation: Int) {
            received.withLock { $0.append(generation) }
        }
    }

    @Test func eachQueueGetsItsDeliveriesInOrderWhateverTheInterleaving() {
        let inline = DispatchQueue(label: "round")
        let queues = [DispatchQueue(label: "a"), DispatchQueue(label: "b"), DispatchQueue(label: "c")]
        let recorders = [Recorder(), Recorder(), Recorder()]
        let own = Recorder()
        var expected: [[Int]] = [[], [], []]
        var expectedOwn: [Int] = []
        inline.sync {
            let batch = DeliveryBatch(inline: inline)
            // Runs of different lengths on each queue, more than a block (256) on each in all.
            var generation = 0
            for run in 0..<400 {
                let which = (run * 7 + run / 5) % 4
                for _ in 0..<(run % 9 + 1) {
                    generation += 1
                    if which == 3 {
                        batch.add(.notReachable(.unresolved), generation: generation, to: own, on: inline)
                        expectedOwn.append(generation)
                        // The round's own queue: delivered at once.
                        #expect(own.received.withLock { $0.last } == generation)
                    } else {
                        batch.add(.notReachable(.unresolved), generation: generation, to: recorders[which], on: queues[which])
                        expected[which].append(generation)
                    }
                }
            }
            batch.send()
        }
        for queue in queues { queue.sync {} }
        for index in 0..<3 {
            #expect(expected[index].count > 256)
            #expect(recorders[index].received.withLock { $0 } == expected[index], "queue \(index)")
        }
        #expect(own.received.withLock { $0 } == expectedOwn)
    }

    @Test func aRecipientReleasedBeforeItsBlockRunsGetsNothing() {
        let inline = DispatchQueue(label: "round")
        let queue = DispatchQueue(label: "callbacks")
        let kept = Recorder()
        weak var released: Recorder?
        inline.sync {
            let batch = DeliveryBatch(inline: inline)
            var temporary: Recorder? = Recorder()
            released = temporary
            batch.add(.notReachable(.unresolved), generation: 1, to: temporary!, on: queue)
            batch.add(.notReachable(.unresolved), generation: 2, to: kept, on: queue)
            temporary = nil
            batch.send()
        }
        queue.sync {}
        #expect(released == nil)
        #expect(kept.received.withLock { $0 } == [2])
    }
}
