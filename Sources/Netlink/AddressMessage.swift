import CNetlink

extension InterfaceAddress {
    /// Parses one `RTM_NEWADDR` / `RTM_DELADDR` message; nil for families other than IPv4 and
    /// IPv6 and for a malformed message (an attribute that overruns it, no address, an address
    /// of the wrong length).
    ///
    /// It reads what ``init(libnl:)`` reads from libnl's parse (`addr_msg_parser`), with its
    /// rules: the flags of `IFA_FLAGS` when present, else the header's; `IFA_ADDRESS` is the
    /// local address when there is no `IFA_LOCAL` or it holds the same bytes, else the peer;
    /// the lifetimes of `IFA_CACHEINFO`, forever without it. The subscription reads address
    /// notifications with it: libnl's way, `nl_cache_include`, searched its address cache one
    /// object at a time, 0.8 million instructions for each notification among 1 500 addresses.
    package init?(message header: UnsafePointer<nlmsghdr>) {
        guard let payload = netlinkPayload(of: header, atLeast: MemoryLayout<ifaddrmsg>.size) else { return nil }
        self.init(payload: payload)
    }

    /// Parses the payload of an address message: an `ifaddrmsg` followed by its attributes.
    package init?(payload: UnsafeRawBufferPointer) {
        guard payload.count >= MemoryLayout<ifaddrmsg>.size else { return nil }
        let header = payload.loadUnaligned(as: ifaddrmsg.self)
        guard let family = AddressFamily(kernel: Int32(header.ifa_family)) else { return nil }
        var addressBytes: UnsafeRawBufferPointer?
        var localBytes: UnsafeRawBufferPointer?
        var broadcast: IPAddress?
        var label: String?
        var flags = UInt32(header.ifa_flags)
        var valid = UInt32.max
        var preferred = UInt32.max
        var attributes = RouteAttributes(payload, from: MemoryLayout<ifaddrmsg>.size)
        while let (type, value) = attributes.next() {
            switch Int(type) {
            case Int(IFA_ADDRESS): addressBytes = value
            case Int(IFA_LOCAL): localBytes = value
            case Int(IFA_BROADCAST): broadcast = IPAddress(attribute: value, family: family)
            case Int(IFA_LABEL): label = value.cString
            case Int(IFA_FLAGS): flags = value.u32 ?? flags
            case Int(IFA_CACHEINFO):
                // struct ifa_cacheinfo: preferred, valid, then two timestamps.
                guard value.count >= MemoryLayout<ifa_cacheinfo>.size else { return nil }
                let info = value.loadUnaligned(as: ifa_cacheinfo.self)
                preferred = info.ifa_prefered
                valid = info.ifa_valid
            default: break
            }
        }
        guard attributes.isWellFormed else { return nil }
        var localAttribute = localBytes
        var peerAttribute: UnsafeRawBufferPointer?
        if let addressBytes {
            if let localBytes, !addressBytes.elementsEqual(localBytes) {
                peerAttribute = addressBytes
            } else {
                localAttribute = addressBytes
            }
        }
        guard let localAttribute, let local = IPAddress(attribute: localAttribute, family: family) else { return nil }
        let peer = peerAttribute.flatMap { IPAddress(attribute: $0, family: family) }
        self.init(
            linkIndex: Int32(bitPattern: header.ifa_index),
            address: local,
            prefixLength: header.ifa_prefixlen,
            peer: peer == local ? nil : peer,
            broadcast: broadcast,
            scope: Scope(rawValue: header.ifa_scope),
            flags: AddressFlags(rawValue: flags),
            validLifetime: Lifetime(kernelValue: valid),
            preferredLifetime: Lifetime(kernelValue: preferred),
            label: label)
    }
}
