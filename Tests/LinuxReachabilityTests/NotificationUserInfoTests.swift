import Foundation
import Testing
import Netlink
@testable import LinuxReachability
@testable import ReachabilityCompat

/// The userInfo of `statusDidChangeNotification`, written by index into a copy of a template.
@Suite("Notification userInfo")
struct NotificationUserInfoTests {
    static let answer = ReachabilityAnswer(flags: [.reachable], gateway: IPAddress("10.0.0.1"), address: IPAddress("192.0.2.1"))
    static let target = ReachabilityTarget.address(IPAddress("192.0.2.1")!)

    @Test func aChangeCarriesFourValuesUnderTheirKeys() {
        let info = StatusNotificationUserInfo.userInfo(status: .reachableViaWired, answer: Self.answer,
                                                       target: Self.target, previousStatus: .notReachable)
        #expect(info.count == 4)
        #expect(info[ReachabilityMonitor.statusUserInfoKey] as? ReachabilityStatus == .reachableViaWired)
        #expect(info[ReachabilityMonitor.previousStatusUserInfoKey] as? ReachabilityStatus == .notReachable)
        #expect(info[ReachabilityMonitor.answerUserInfoKey] as? ReachabilityAnswer == Self.answer)
        #expect(info[ReachabilityMonitor.targetUserInfoKey] as? ReachabilityTarget == Self.target)
        // Keys as a user would spell them, and no placeholder left behind.
        #expect(info["status"] != nil && info["previousStatus"] != nil)
        #expect(!info.values.contains { $0 is Void })
    }

    @Test func theFirstAnswerHasNoPreviousStatus() {
        let info = StatusNotificationUserInfo.userInfo(status: .notReachable, answer: Self.answer,
                                                       target: Self.target, previousStatus: nil)
        #expect(info.count == 3)
        #expect(info[ReachabilityMonitor.previousStatusUserInfoKey] == nil)
        #expect(info[ReachabilityMonitor.statusUserInfoKey] as? ReachabilityStatus == .notReachable)
        #expect(!info.values.contains { $0 is Void })
    }

    @Test func copiesAreIndependentOfEachOtherAndOfTheTemplate() {
        let first = StatusNotificationUserInfo.userInfo(status: .reachableViaWiFi, answer: Self.answer,
                                                        target: Self.target, previousStatus: .notReachable)
        var mutated = first
        mutated[ReachabilityMonitor.statusUserInfoKey] = ReachabilityStatus.notReachable
        mutated["extra"] = 1
        let second = StatusNotificationUserInfo.userInfo(status: .reachableViaWWAN, answer: Self.answer,
                                                         target: Self.target, previousStatus: .reachableViaWiFi)
        #expect(first[ReachabilityMonitor.statusUserInfoKey] as? ReachabilityStatus == .reachableViaWiFi)
        #expect(second[ReachabilityMonitor.statusUserInfoKey] as? ReachabilityStatus == .reachableViaWWAN)
        #expect(second[ReachabilityMonitor.previousStatusUserInfoKey] as? ReachabilityStatus == .reachableViaWiFi)
        #expect(second.count == 4 && second["extra"] == nil)
    }

    @Test func sameAnswerComparesWhatAUserSees() {
        var other = Self.answer
        #expect(other.isSameAnswer(as: Self.answer))
        other.route = nil
        other.addresses = [IPAddress("192.0.2.9")!]
        #expect(other.isSameAnswer(as: Self.answer))  // route details and the address list aside
        for change in [{ (a: inout ReachabilityAnswer) in a.gateway = IPAddress("10.0.0.2") },
                       { $0.flags = [] },
                       { $0.address = IPAddress("192.0.2.2") },
                       { $0.reason = .noRoute },
                       { $0.interface = Self.interface(name: "eth0", index: 2) }] {
            var changed = Self.answer
            change(&changed)
            #expect(!changed.isSameAnswer(as: Self.answer))
            #expect(!Self.answer.isSameAnswer(as: changed))
        }
        // The link: its index, then its name and classification.
        var onLink = Self.answer
        onLink.interface = Self.interface(name: "eth0", index: 2)
        for interface in [Self.interface(name: "eth0", index: 3), Self.interface(name: "eth1", index: 2)] {
            var moved = onLink
            moved.interface = interface
            #expect(!moved.isSameAnswer(as: onLink))
        }
        var same = onLink
        same.interface = Self.interface(name: "eth0", index: 2)
        #expect(same.isSameAnswer(as: onLink))
    }

    static func interface(name: String, index: Int32) -> NetworkInterface {
        NetworkInterface(name: name, index: index,
                              classification: LinkClassification(type: .wiredEthernet, kind: .ethernet, evidence: .rtnetlinkKind("veth")))
    }
}
