import Glibc

/// A value that many threads share, behind a plain pthread mutex.
///
/// The library's shared state is guarded by this rather than by `Synchronization.Mutex`, for
/// two measured reasons. Under contention `Mutex` spins in user space before it sleeps: while a
/// subscription followed a churn of 100 000 route changes, a third of the process's CPU time
/// went to that spinning between the netlink thread and an evaluation queue. And the thread
/// sanitizer does not see `Mutex`'s futex as a lock, so every access it guards was reported as a
/// race; it sees pthread mutexes.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: the value is only reached through `withLock`, with the mutex held,
    // so one thread at a time reads or writes it. The mutex and the value are allocated once,
    // never move, and are freed in deinit, when no thread can hold a reference.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let storage = UnsafeMutablePointer<Value>.allocate(capacity: 1)

    /// Creates the lock around `value`.
    package init(_ value: consuming Value) {
        pthread_mutex_init(mutex, nil)
        storage.initialize(to: value)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held. `body` must not call user code or take this
    /// lock again.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}
