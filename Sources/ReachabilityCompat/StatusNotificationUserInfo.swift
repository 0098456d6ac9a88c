import LinuxReachability
/// Builds the `userInfo` of `ReachabilityMonitor.statusDidChangeNotification` without hashing its keys.
///
/// A `[AnyHashable: Any]` filled key by key hashes every key through `AnyHashable` (some 460
/// instructions for a short string) and compares colliding keys with a dynamic cast; for 10 000
/// monitors told of one change, that was a tenth of all the work (callgrind). A copy of a
/// dictionary keeps its buckets and its age, so an index into the template is an index into
/// the copy: each notification copies a template that already holds the keys and writes the
/// values by index. The result is an ordinary dictionary; lookups by key work as usual.
struct StatusNotificationUserInfo: @unchecked Sendable {
    // @unchecked Sendable: only `let`s, of which the dictionary is only ever copied (a value
    // with an atomically counted buffer) and its values, until a copy is written, are `()`.
    // The indices are plain positions; they are not Sendable only because `Any` is not.

    /// For a change (the previous status is known).
    static let change = StatusNotificationUserInfo(withPreviousStatus: true)
    /// For the first answer (no previous status).
    static let first = StatusNotificationUserInfo(withPreviousStatus: false)

    /// The keys, each with `()` until a copy gets the real value.
    private let template: [AnyHashable: Any]
    private let status: Dictionary<AnyHashable, Any>.Index
    private let answer: Dictionary<AnyHashable, Any>.Index
    private let target: Dictionary<AnyHashable, Any>.Index
    private let previousStatus: Dictionary<AnyHashable, Any>.Index?

    private init(withPreviousStatus: Bool) {
        var keys = [ReachabilityMonitor.statusUserInfoKey, ReachabilityMonitor.answerUserInfoKey, ReachabilityMonitor.targetUserInfoKey]
        if withPreviousStatus { keys.append(ReachabilityMonitor.previousStatusUserInfoKey) }
        var dictionary = [AnyHashable: Any](minimumCapacity: keys.count)
        for key in keys { dictionary[key] = () }
        status = dictionary.index(forKey: ReachabilityMonitor.statusUserInfoKey)!
        answer = dictionary.index(forKey: ReachabilityMonitor.answerUserInfoKey)!
        target = dictionary.index(forKey: ReachabilityMonitor.targetUserInfoKey)!
        previousStatus = withPreviousStatus ? dictionary.index(forKey: ReachabilityMonitor.previousStatusUserInfoKey)! : nil
        template = dictionary
    }

    /// The userInfo for a monitor's new answer.
    static func userInfo(status: ReachabilityStatus, answer: ReachabilityAnswer, target: ReachabilityTarget,
                         previousStatus: ReachabilityStatus?) -> [AnyHashable: Any] {
        let layout = previousStatus == nil ? first : change
        var userInfo = layout.template
        userInfo.values[layout.status] = status
        userInfo.values[layout.answer] = answer
        userInfo.values[layout.target] = target
        if let previousStatus, let index = layout.previousStatus { userInfo.values[index] = previousStatus }
        return userInfo
    }
}
