import CNetlink
import Glibc

// How route questions and answers look on the wire (RequestSocket).

extension RouteLookupResult {
    /// The answer that a lookup's error reply stands for, or nil for an error that is not an
    /// answer (the lookup itself failed).
    init?(lookupErrno code: Int32) {
        switch code {
        case EHOSTUNREACH: self = .unreachable
        case EACCES: self = .prohibited
        case EINVAL: self = .blackhole
        case ENETUNREACH: self = .noRoute
        default: return nil
        }
    }
}

extension RouteFilter {
    /// The `rtmsg` of a dump request for `family` with the filters the kernel applies in the
    /// header (a table below 256, the type, the protocol), and the ones it takes as attributes
    /// (a table from 256 on, the output link). Strict dump checking must be on for the kernel to
    /// read them.
    func dumpRequest(family: AddressFamily) -> (header: rtmsg, attributes: [(type: UInt16, value: UInt32)]) {
        var header = rtmsg()
        header.rtm_family = family.rawValue
        var attributes: [(type: UInt16, value: UInt32)] = []
        if let table {
            if table.rawValue < 256 {
                header.rtm_table = UInt8(table.rawValue)
            } else {
                attributes.append((UInt16(RTA_TABLE.rawValue), table.rawValue))
            }
        }
        if let type { header.rtm_type = type.rawValue }
        if let routeProtocol { header.rtm_protocol = routeProtocol.rawValue }
        if let outputLinkIndex { attributes.append((UInt16(RTA_OIF.rawValue), UInt32(bitPattern: outputLinkIndex))) }
        return (header, attributes)
    }
}
