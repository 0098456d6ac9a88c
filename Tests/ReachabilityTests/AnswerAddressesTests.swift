import Netlink
@testable import Reachability
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
}
