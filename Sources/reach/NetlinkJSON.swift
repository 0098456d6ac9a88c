import Netlink
import Reachability

/// The JSON forms of the Netlink values, shared by `links` and `events`.
extension Link {
    /// The link with the classifier's answer: `type`, `kind` (a ``LinkKind``), `infoKind` (the
    /// rtnetlink kind), `expensive`, `transient`, `virtual`, `constrained` and `evidence`.
    func json(_ classification: LinkClassification) -> JSON {
        .object([
            ("name", .string(name)), ("index", .int(index)),
        ] + classification.jsonFields(infoKind: kind) + [
            ("arphrd", .int(arphrdType.rawValue)),
            ("operState", .string(operState.description)), ("up", .bool(isUp)), ("running", .bool(isRunning)),
            ("flags", .array(flags.names.map(JSON.string))), ("carrier", carrier.map(JSON.bool) ?? .null),
            ("mtu", .int(mtu)), ("hardwareAddress", .string(hardwareAddress?.description)),
            ("master", .int(masterIndex)), ("link", .int(lowerLinkIndex)), ("linkNetnsid", .int(linkNamespaceID)),
        ])
    }
}

extension LinkClassification {
    /// The classification fields that `links` and `events` share.
    func jsonFields(infoKind: String?) -> [(String, JSON)] {
        [
            ("type", .string(type.description)), ("kind", .string(kind.rawValue)), ("infoKind", .string(infoKind)),
            ("expensive", .bool(isExpensive)), ("transient", .bool(isTransient)), ("virtual", .bool(isVirtual)),
            ("constrained", .bool(isConstrained)), ("evidence", .string(evidence.description)),
        ]
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

private func lifetimeJSON(_ lifetime: Lifetime) -> JSON {
    switch lifetime {
    case .forever: return .string("forever")
    case .seconds(let s): return .int(s)
    }
}

extension Route {
    var json: JSON {
        .object([
            ("family", .string(family.description)), ("table", .string(table.description)),
            ("type", .string(type.description)),
            ("destination", .string(isDefault ? "default" : destination.description)),
            ("gateway", .string(gateway?.description)), ("index", .int(outputLinkIndex)),
            ("protocol", .string(routeProtocol.description)), ("scope", .string(scope.description)),
            ("metric", .int(metric)), ("preferredSource", .string(preferredSource?.description)),
            ("flags", .array(flags.names.map(JSON.string))),
            ("nexthops", .array(nexthops.count > 1 ? nexthops.map { hop in
                .object([("gateway", .string(hop.gateway?.description)), ("index", .int(hop.linkIndex)),
                         ("weight", .int(hop.weight))])
            } : [])),
        ])
    }
}
