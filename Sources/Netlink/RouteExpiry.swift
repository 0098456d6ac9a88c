extension Optional where Wrapped == ContinuousClock.Instant {
    /// Keeps the earlier of this instant, if any, and `instant` (the soonest expiry seen).
    mutating func keepEarliest(_ instant: ContinuousClock.Instant) {
        if map({ instant < $0 }) ?? true { self = instant }
    }
}
