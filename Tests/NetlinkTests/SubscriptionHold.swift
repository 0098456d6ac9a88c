import Dispatch
import Netlink

/// Holds a subscription's thread at the first `times` events that match, each time for `limit`
/// or until ``release()``, so that the kernel's next notifications pile up in the socket
/// whatever the speed of the machine: they are then read in one wake-up, or overflow a small
/// buffer.
final class SubscriptionHold: Sendable {
    private let observation: NetlinkObservation
    private let wakeUp = DispatchSemaphore(value: 0)
    /// Holds so far, and whether ``release()`` was called (a pthread lock, which the thread
    /// sanitizer sees).
    private let progress = Locked((held: 0, released: false))

    init(_ subscription: NetlinkSubscription, times: Int = 1, for limit: DispatchTimeInterval,
         at matches: @escaping @Sendable (NetlinkEvent) -> Bool) {
        let (wakeUp, progress) = (self.wakeUp, self.progress)
        observation = subscription.observeOnSubscriptionThread { event in
            guard matches(event) else { return }
            let hold = progress.withLock { progress in
                guard !progress.released, progress.held < times else { return false }
                progress.held += 1
                return true
            }
            if hold { _ = wakeUp.wait(timeout: .now() + limit) }
        }
    }

    /// Lets the subscription's thread go on now, and hold no more.
    func release() {
        progress.withLock { $0.released = true }
        wakeUp.signal()
    }

    func cancel() { observation.cancel() }
}
