/// One process-wide lock that every descriptor the library opens is opened under.
///
/// libnl 3.7's `nl_cache_mngr_alloc` aborts the process when it cannot connect the socket it
/// opens for itself (it frees that socket twice: `BUG()` in `nl_cb_put`). So a cache manager is
/// created only once two descriptors are known to be free (``CacheManager``), and that check
/// holds only while no other thread takes them: every other descriptor of the library (sockets,
/// namespace handles, eventfds, timers) is opened under this lock too. A thread outside the
/// library that opens descriptors at that very moment still could take them.
enum DescriptorCreation {
    private static let lock = Locked(())

    /// Runs `body`, which opens descriptors, with no other descriptor of the library opened
    /// meanwhile. `body` must not wait for another thread that opens one.
    static func serialized<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        try lock.withLock { _ throws(Failure) -> T in try body() }
    }
}
