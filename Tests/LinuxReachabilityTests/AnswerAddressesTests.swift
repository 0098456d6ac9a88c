import Netlink
@testable import LinuxReachability
import Testing

/// ``ReachabilityAnswer/addresses`` is kept without an array for one address; the answers it
/// gives, and their equality and hash, are those of the arrays.
@Suite("Answer addresses")
struct AnswerAddressesTests {
    private let one = IPAddress("198.51.100.7")!
    private let other = IPAddress("2001:db8::7")!

    @Test func oneAddressHoweverSetIsTheSameAnswer() {
        let base = ReachabilityAnswer(flags: [.reachable], address: one)
        var fromArray = base
        fromArray.addresses = [one]
        var fromSetter = base
        fromSetter.setAddresses(to: one)
        let member = base.forMember(one)
        for answer in [fromArray, fromSetter, member] {
            #expect(answer.addresses == [one])
            #expect(answer == fromArray)
            #expect(answer.hashValue == fromArray.hashValue)
        }
        #expect(Set([fromArray, fromSetter, member]).count == 1)
    }

    @Test func noneAndManyRoundTrip() {
        var answer = ReachabilityAnswer(flags: [])
        #expect(answer.addresses.isEmpty)
        answer.addresses = [one, other]
        #expect(answer.addresses == [one, other])
        answer.addresses = [other]
        #expect(answer.addresses == [other])
        answer.addresses = []
        #expect(answer == ReachabilityAnswer(flags: []))
        #expect(answer.hashValue == ReachabilityAnswer(flags: []).hashValue)
        // Two addresses are not one.
        var two = answer
        two.addresses = [one, one]
        var single = answer
        single.addresses = [one]
        #expect(two != single)
    }

    @Test func aMemberNarrowsTheRouteToItsAddress() {
        let route = Route(family: .ipv4, destination: IPNetwork("198.51.100.0/24")!)
        let shared = ReachabilityAnswer(flags: [.reachable], address: IPAddress("198.51.100.1")!, route: route)
        let member = shared.forMember(one)
        #expect(member.address == one)
        #expect(member.route?.destination == IPNetwork("198.51.100.7/32")!)
        #expect(shared.route?.destination == IPNetwork("198.51.100.0/24")!)
        #expect(shared.addresses.isEmpty)
    }

    @Test func anIPv6MemberIsNarrowedToo() {
        let route = Route(family: .ipv6, destination: IPNetwork("2001:db8::/64")!)
        let shared = ReachabilityAnswer(flags: [.reachable], address: IPAddress("2001:db8::1")!, route: route)
        let member = shared.forMember(other)
        #expect(member.address == other)
        #expect(member.addresses == [other])
        #expect(member.route?.destination == IPNetwork("2001:db8::7/128")!)
        #expect(shared.route?.destination == IPNetwork("2001:db8::/64")!)
    }

    /// Members of a group share their group's parts; changing one changes neither the group's
    /// answer nor another member's, and the changed member keeps its own address and route.
    @Test func changingAMemberLeavesItsGroupAlone() {
        let route = Route(family: .ipv4, destination: IPNetwork("0.0.0.0/0")!)
        let shared = ReachabilityAnswer(flags: [.reachable], gateway: IPAddress("192.0.2.1")!,
                                        address: IPAddress("198.51.100.1")!, route: route)
        let second = IPAddress("198.51.100.8")!
        var first = shared.forMember(one)
        let sibling = shared.forMember(second)
        #expect(first != sibling)
        #expect(!first.isSameAnswer(as: sibling))
        #expect(first.isSameAnswer(as: shared.forMember(one)))
        first.flags = [.reachable, .isDirect]
        first.gateway = nil
        #expect(first.address == one)
        #expect(first.route?.destination == IPNetwork("198.51.100.7/32")!)
        #expect(first.flags == [.reachable, .isDirect])
        #expect(sibling.flags == [.reachable] && sibling.gateway == IPAddress("192.0.2.1")!)
        #expect(sibling.address == second && sibling.route?.destination == IPNetwork("198.51.100.8/32")!)
        #expect(shared.flags == [.reachable] && shared.address == IPAddress("198.51.100.1")!)
        #expect(shared.route?.destination == IPNetwork("0.0.0.0/0")!)
        // A member and the same answer built whole are equal, and hash alike.
        var whole = ReachabilityAnswer(flags: [.reachable], gateway: IPAddress("192.0.2.1")!, address: second,
                                       route: Route(family: .ipv4, destination: IPNetwork("198.51.100.8/32")!))
        whole.addresses = [second]
        #expect(sibling == whole)
        #expect(sibling.hashValue == whole.hashValue)
    }

    /// A member moved to storage of its own (a block of a round's deliveries) is the same
    /// answer, and changing it changes nothing else.
    @Test func aMemberInItsOwnBoxIsTheSameAnswer() {
        let route = Route(family: .ipv4, destination: IPNetwork("0.0.0.0/0")!)
        let shared = ReachabilityAnswer(flags: [.reachable], gateway: IPAddress("192.0.2.1")!,
                                        address: IPAddress("198.51.100.1")!, route: route)
        let member = shared.forMember(one)
        var moved = member.inOwnBox()
        let movedShared = shared.inOwnBox()
        #expect(moved == member && moved.hashValue == member.hashValue)
        #expect(moved.isSameAnswer(as: member) && member.isSameAnswer(as: moved))
        #expect(movedShared == shared && movedShared.forMember(one) == member)
        #expect(moved.address == one && moved.route?.destination == IPNetwork("198.51.100.7/32")!)
        moved.gateway = nil
        #expect(member.gateway == IPAddress("192.0.2.1")! && shared.gateway == IPAddress("192.0.2.1")!)
        #expect(!moved.isSameAnswer(as: member))
    }

    /// An answer is a userInfo value of every notification: it must fit in an `Any` without a
    /// box of its own (three words).
    @Test func anAnswerFitsInAnAnyInline() {
        #expect(MemoryLayout<ReachabilityAnswer>.size <= 3 * MemoryLayout<Int>.size)
    }

    /// So must the target, the userInfo's other value that is not a plain enumeration.
    @Test func aTargetFitsInAnAnyInline() {
        #expect(MemoryLayout<ReachabilityTarget>.size <= 3 * MemoryLayout<Int>.size)
        let pair = ReachabilityTarget.addressPair(local: IPAddress("192.0.2.1")!, remote: other)
        guard case .addressPair(let local, let remote) = pair else {
            Issue.record("not a pair")
            return
        }
        #expect(local == IPAddress("192.0.2.1")! && remote == other)
        #expect(pair == .addressPair(local: IPAddress("192.0.2.1")!, remote: other))
    }
}
