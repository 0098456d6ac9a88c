import Glibc
@testable import Netlink
import Testing

/// How an IPv4 default-route dump's `NLMSG_DONE` is read when its first route did not fit the
/// small first datagram of a new socket's first dump. Linux 6.10 and later end such a dump with
/// `NLMSG_DONE` of 0 (the kernel of the namespace tests, `LargeRouteMessageTests`); earlier
/// kernels with one of `EMSGSIZE`, which this machine's kernel cannot be made to send. Both must
/// read as an empty dump there, which is asked again where datagrams are large; `EMSGSIZE` in a
/// large datagram, or after a message, is a failure.
@Suite("The end of a dump whose first route did not fit")
struct DumpEndTests {
    static let newSocketDatagram = 4096
    static let largeDatagram = 32 * 1024

    @Test func emsgsizeBeforeAnyMessageInANewSocketsFirstDatagramIsAnEmptyDump() {
        #expect(RawRouteSocket.endsAsEmptyDump(errorCode: EMSGSIZE, messagesRead: 0, datagramCapacity: Self.newSocketDatagram))
    }

    @Test func emsgsizeInALargeDatagramIsAFailure() {
        #expect(!RawRouteSocket.endsAsEmptyDump(errorCode: EMSGSIZE, messagesRead: 0, datagramCapacity: Self.largeDatagram))
    }

    @Test func emsgsizeAfterAMessageIsAFailure() {
        #expect(!RawRouteSocket.endsAsEmptyDump(errorCode: EMSGSIZE, messagesRead: 1, datagramCapacity: Self.newSocketDatagram))
    }

    @Test func otherErrorsAreFailures() {
        for code in [ENOENT, ENOBUFS, EINVAL, EPERM] {
            #expect(!RawRouteSocket.endsAsEmptyDump(errorCode: code, messagesRead: 0, datagramCapacity: Self.newSocketDatagram))
        }
    }
}
