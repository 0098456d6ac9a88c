import Netlink
import LinuxReachability

/// The JSON forms of the Netlink values, shared by `links` and `events`.
extension Link {
    /// Writes the link with the classifier's answer: `type`, `kind` (a ``LinkKind``),
    /// `infoKind` (the rtnetlink kind), `expensive`, `transient`, `virtual`, `constrained` and
    /// `evidence`, then the link's own fields, its alternative names (`altnames`) last. Written straight into the line's bytes, as routes are: building it as a
    /// ``JSON`` tree first cost `reach events` a third of its instructions per link flip.
    func writeJSON(_ classification: LinkClassification, to out: inout JSONWriter) {
        out.beginObject()
        writeJSONSummaryFields(classification, to: &out)
        out.key("flags"); out.value(flags: flags)
        out.key("carrier"); out.value(carrier)
        out.key("mtu"); out.value(mtu)
        out.key("hardwareAddress"); out.value(hardwareAddress?.description)
        out.key("master"); out.value(masterIndex)
        out.key("link"); out.value(lowerLinkIndex)
        out.key("linkNetnsid"); out.value(linkNamespaceID)
        out.key("group"); out.value(group)
        out.key("altnames"); out.value(names: alternativeNames)
        out.endObject()
    }
}

extension Link {
    /// Writes the fields that `links` and `events` share, in the contract's order: `name`,
    /// `index`, the classification's fields, `arphrd`, `operState`, `up` and `running`.
    func writeJSONSummaryFields(_ classification: LinkClassification, to out: inout JSONWriter) {
        out.key("name"); out.value(name)
        out.key("index"); out.value(index)
        out.fragment(ClassificationFields(classification: classification, infoKind: kind)) {
            classification.writeJSONFields(infoKind: kind, to: &$0)
        }
        out.key("arphrd"); out.value(arphrdType.rawValue)
        out.key("operState"); out.value(operState.description)
        out.key("up"); out.value(isUp)
        out.key("running"); out.value(isRunning)
    }
}

/// What a link's classification fields are written from (the key of their
/// ``JSONWriter/fragment(_:_:)``).
struct ClassificationFields: Equatable {
    let classification: LinkClassification
    let infoKind: String?
}

extension LinkClassification {
    /// Writes the classification fields that `links` and `events` share.
    func writeJSONFields(infoKind: String?, to out: inout JSONWriter) {
        out.key("type"); out.value(type.description)
        out.key("kind"); out.value(kind.rawValue)
        out.key("infoKind"); out.value(infoKind)
        out.key("expensive"); out.value(isExpensive)
        out.key("transient"); out.value(isTransient)
        out.key("virtual"); out.value(isVirtual)
        out.key("constrained"); out.value(isConstrained)
        out.key("evidence"); out.value(evidence.description)
    }
}

extension InterfaceAddress {
    var json: JSON {
        .object([
            ("index", .int(linkIndex)), ("family", .string(family.description)), ("address", .string(cidr)),
            ("peer", .string(peer?.description)), ("broadcast", .string(broadcast?.description)),
            ("scope", .string(scope.description)), ("flags", .array(flags.names.map(JSON.string))),
            ("validLifetime", lifetimeJSON(validLifetime)), ("preferredLifetime", lifetimeJSON(preferredLifetime)),
            ("label", .string(label)),
        ])
    }
}

extension InterfaceConfiguration {
    /// `family`, `scope` (`all`, `default` or `link`), `index` (the link's, or null), and the
    /// values the kernel reported (null when it did not): `forwarding`, `rpFilter`,
    /// `ignoreRoutesWithLinkdown`, `proxyNeighbors`.
    var json: JSON {
        let scopeName: String, index: Int32?
        switch scope {
        case .allLinks: (scopeName, index) = ("all", nil)
        case .newLinks: (scopeName, index) = ("default", nil)
        case .link(let link): (scopeName, index) = ("link", link)
        }
        return .object([
            ("family", .string(family.description)), ("scope", .string(scopeName)), ("index", .int(index)),
            ("forwarding", forwarding.map(JSON.bool) ?? .null), ("rpFilter", .int(reversePathFilter)),
            ("ignoreRoutesWithLinkdown", ignoresRoutesWithLinkdown.map(JSON.bool) ?? .null),
            ("proxyNeighbors", proxiesNeighbors.map(JSON.bool) ?? .null),
        ])
    }
}

extension Neighbor {
    /// `index`, `family`, `address`, `lladdr` (or null), `state` (the NUD names) and `router`.
    var json: JSON {
        .object([
            ("index", .int(linkIndex)), ("family", .string(address.family.description)),
            ("address", .string(address.description)), ("lladdr", .string(linkLayerAddress?.description)),
            ("state", .string(state.description)), ("router", .bool(isRouter)),
        ])
    }
}

private func lifetimeJSON(_ lifetime: Lifetime) -> JSON {
    switch lifetime {
    case .forever: return .string("forever")
    case .seconds(let s): return .int(s)
    }
}

extension Route {
    /// Writes the route's JSON object: routes are the events a churn brings by the hundred
    /// thousand, so they are written straight into the line's bytes (``JSONWriter``). Its
    /// fields, in order: `family`, `table`, `type`, `destination` (`default` or a prefix),
    /// `sourcePrefix` (an IPv6 `from` prefix, or null), `gateway`, `index`, `protocol`,
    /// `scope`, `metric`, `preference` (an IPv6 router's `low`, `medium` or `high`; null for
    /// IPv4), `tos`, `preferredSource`, `flags`, `nexthops` (of a multipath route: `gateway`,
    /// `index`, `weight` and the hop's own `flags`, such as `dead` and `linkdown`) and
    /// `nexthopID`.
    func writeJSON(to out: inout JSONWriter) {
        out.beginObject()
        out.key("family"); out.value(.family, family)
        out.key("table"); out.value(.table, table)
        out.key("type"); out.value(.type, type)
        out.key("destination")
        if isDefault { out.value("default" as StaticString) } else { out.value(destination) }
        out.key("sourcePrefix"); out.value(sourcePrefix)
        out.key("gateway"); out.value(gateway)
        out.key("index"); out.value(outputLinkIndex)
        out.key("protocol"); out.value(.routeProtocol, routeProtocol)
        out.key("scope"); out.value(.scope, scope)
        out.key("metric"); out.value(metric)
        out.key("preference"); out.value(preference?.description)
        out.key("tos"); out.value(tos)
        out.key("preferredSource"); out.value(preferredSource)
        out.key("flags"); out.value(flags: flags)
        out.key("nexthops")
        out.beginArray()
        if nexthops.count > 1 {
            for hop in nexthops {
                out.beginObject()
                out.key("gateway"); out.value(hop.gateway)
                out.key("index"); out.value(hop.linkIndex)
                out.key("weight"); out.value(hop.weight)
                out.key("flags"); out.value(flags: hop.flags)
                out.endObject()
            }
        }
        out.endArray()
        out.key("nexthopID"); out.value(nexthopID)
        out.endObject()
    }
}

extension JSONWriter {
    /// An address as a string value, or null: IPv4 written digit by digit (an event stream
    /// prints millions), IPv6 through its description.
    mutating func value(_ address: IPAddress?) {
        guard let address else { return value(nil as String?) }
        value { $0.appendAddress(address) }
    }

    /// A network (`address/prefix`) as a string value, IPv4 written digit by digit, or null.
    mutating func value(_ network: IPNetwork?) {
        guard let network else { return value(nil as String?) }
        value { sink in
            sink.appendAddress(network.address)
            sink.append(UInt8(ascii: "/"))
            sink.appendDecimal(Int64(network.prefixLength))
        }
    }
}

extension ByteSink {
    /// Appends `address` as it prints: IPv4 digit by digit, IPv6 through its description.
    mutating func appendAddress(_ address: IPAddress) {
        if case .v4(let v4) = address { appendIPv4(v4) } else { append(utf8: address.description) }
    }

    /// Appends `address` in dotted decimal (written by `Netlink`'s own writer, with one copy).
    mutating func appendIPv4(_ address: IPv4Address) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: IPv4Address.dottedDecimalCapacity) { buffer in
            let count = address.writeDottedDecimal(into: buffer)
            append(bytes: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }
}
