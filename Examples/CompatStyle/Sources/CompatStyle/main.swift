// Reachability.swift's closures and notification, told once each, then stopped.
import Foundation
import ReachabilityCompat

let reachability = try Reachability()
let told = DispatchSemaphore(value: 0)
reachability.whenReachable = { reachability in
    print("reachable over \(reachability.connection)")
    told.signal()
}
reachability.whenUnreachable = { _ in
    print("not reachable")
    told.signal()
}
let observer = NotificationCenter.default.addObserver(forName: .reachabilityChanged, object: reachability,
                                                      queue: nil) { note in
    print("notified: \((note.object as? Reachability)?.connection.description ?? "?")")
    told.signal()
}
try reachability.startNotifier()
// The closure and the notification, for the current answer.
for _ in 0..<2 {
    guard told.wait(timeout: .now() + 10) == .success else {
        print("no answer within 10 s")
        exit(1)
    }
}
reachability.stopNotifier()
NotificationCenter.default.removeObserver(observer)
