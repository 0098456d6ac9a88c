import Foundation
import LinuxReachability

extension ReachabilityMonitor {
    /// Posted on the callback queue after every change while ``postsNotifications`` is `true`,
    /// whatever else is set (a delegate, `onChange`), as Nexum and FXReachability post theirs.
    /// `object` is the `ReachabilityMonitor`; `userInfo` has ``statusUserInfoKey``,
    /// ``previousStatusUserInfoKey`` (absent for the first answer), ``answerUserInfoKey`` and
    /// ``targetUserInfoKey``.
    public static let statusDidChangeNotification = Notification.Name("ReachabilityStatusDidChange")
    /// userInfo key: the new `ReachabilityStatus`.
    public static let statusUserInfoKey = "status"
    /// userInfo key: the previous `ReachabilityStatus`.
    public static let previousStatusUserInfoKey = "previousStatus"
    /// userInfo key: the new `ReachabilityAnswer`.
    public static let answerUserInfoKey = "answer"
    /// userInfo key: the `ReachabilityTarget`.
    public static let targetUserInfoKey = "target"

    /// Whether each change is also posted as ``statusDidChangeNotification`` to
    /// `NotificationCenter.default` (default `false`: set it on each monitor that is followed
    /// through notifications).
    ///
    /// A notification boxes the answer into a `userInfo` dictionary and goes through
    /// `NotificationCenter`: for 10 000 monitors that change at once, that is about half of
    /// the cost of telling them (BENCHMARKS.md).
    public var postsNotifications: Bool {
        get { hasDeliveryHook }
        set { setDeliveryHook(newValue ? Self.postNotification : nil) }
    }

    @Sendable private static func postNotification(_ monitor: ReachabilityMonitor, _ answer: ReachabilityAnswer,
                                                   _ previousStatus: ReachabilityStatus?) {
        let userInfo = StatusNotificationUserInfo.userInfo(status: answer.status, answer: answer, target: monitor.target,
                                                           previousStatus: previousStatus)
        NotificationCenter.default.post(name: statusDidChangeNotification, object: monitor, userInfo: userInfo)
    }
}
