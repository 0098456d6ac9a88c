import Glibc
import Netlink

// Which default routes carry this host's traffic to the internet: the policy rules' walk, as the
// kernel makes it (`fib_rules_lookup`), for a packet that a process of this user sends through
// an unbound socket, without a firewall mark, to an address no more specific route covers.

extension ReachabilityEvaluator {
    /// The user whose sockets the internet's traffic comes from: this process's.
    public static var currentUserID: UInt32 { UInt32(geteuid()) }

    /// The default routes that can carry this host's traffic to the internet, in the order the
    /// kernel would try them: by policy rule, then lowest metric first (IPv4 before IPv6 on a
    /// tie).
    ///
    /// In each family, the rules (`NetworkState.policyRules`) are walked by priority, as the
    /// kernel walks them for a packet that a socket of `userID`, bound to no link, sends
    /// without a firewall mark, from this host (input link `lo`), to an address in no
    /// particular prefix. A rule that selects such a packet (see ``ruleSelectsInternetTraffic(_:userID:)``):
    /// - looking up a table: gives the table's default routes for every type of service, lowest
    ///   metric first: the unicast ones up to the first that refuses (unreachable, prohibit,
    ///   blackhole), which is included and ends the family: the kernel's lookup takes it before
    ///   any default route with a higher metric, so those cannot carry anything (an
    ///   `unreachable default metric 1`, a VPN's kill switch, makes the family unreachable). A
    ///   table with a unicast default route ends the walk; one without (or whose first is a
    ///   `throw` route, or whose rule has `suppress_prefixlength`, which passes over default
    ///   routes) passes the packet to the next rule;
    /// - `goto`: goes on at the rule with that priority; `nop`: goes on;
    /// - `blackhole`, `unreachable`, `prohibit`: ends the family with nothing.
    ///
    /// A family without rules in the state (built by hand, or a kernel without policy routing)
    /// is routed by its main table, where a `throw` default route refuses too. A rule's
    /// `suppress_ifgroup` is not applied (links' groups are not read).
    ///
    /// So with WireGuard's `wg-quick` (`not fwmark 51820 lookup 51820`, and `lookup main
    /// suppress_prefixlength 0` before it), the internet goes through the tunnel's table, and
    /// with a Tailscale exit node through table 52.
    public static func internetRoutes(_ state: NetworkState, userID: UInt32 = currentUserID) -> [Route] {
        var ranked: [(rank: UInt32, route: Route)] = []
        for family in AddressFamily.allCases {
            let defaults = state.defaultRoutes.values.filter { $0.family == family && $0.tos == 0 }
            let rules = state.policyRules.filter { $0.family == family }
            if rules.isEmpty {
                let (routes, _) = tableRoutes(defaults.filter { $0.table == .main }, suppressed: false, throwRefuses: true)
                ranked += routes.map { (32766, $0) }
                continue
            }
            var index = 0
            walk: while index < rules.count {
                let rule = rules[index]
                index += 1
                guard ruleSelectsInternetTraffic(rule, userID: userID) else { continue }
                switch rule.action {
                case .toTable:
                    let (routes, ends) = tableRoutes(defaults.filter { $0.table == rule.table },
                                                     suppressed: rule.suppressPrefixLength != nil, throwRefuses: false)
                    ranked += routes.map { (rule.priority, $0) }
                    if ends { break walk }
                case .goto:
                    // The kernel jumps to the first rule with exactly that priority, always a later
                    // one; without one, the rule is passed over.
                    if let target = rule.gotoTarget,
                       let next = rules[index...].firstIndex(where: { $0.priority == target }) {
                        index = next
                    }
                case let action where action.refuses:
                    break walk
                default:
                    continue
                }
            }
        }
        return ranked.sorted {
            ($0.rank, $0.route.metric, $0.route.family.rawValue, $0.route.outputLinkIndex ?? 0)
                < ($1.rank, $1.route.metric, $1.route.family.rawValue, $1.route.outputLinkIndex ?? 0)
        }.map(\.route)
    }

    /// What a lookup in one table gives: its default routes in the kernel's order (metric), the
    /// unicast ones up to the first refusing one, which is included; and whether the lookup
    /// ends there (a unicast or refusing route answered) or passes on to the next rule (no
    /// default route, a `throw` first, or unicast answers suppressed by the rule).
    private static func tableRoutes(_ defaults: [Route], suppressed: Bool, throwRefuses: Bool) -> (routes: [Route], ends: Bool) {
        let ordered = defaults.sorted { ($0.metric, $0.outputLinkIndex ?? 0) < ($1.metric, $1.outputLinkIndex ?? 0) }
        var routes: [Route] = []
        for route in ordered {
            switch route.type {
            case .unicast:
                // A suppressed answer is passed over, and so is the table: its first route
                // answers, and any unicast default route would be suppressed alike.
                if suppressed { return (routes, !routes.isEmpty) }
                routes.append(route)
            case .unreachable, .prohibit, .blackhole:
                routes.append(route)
                return (routes, true)
            case .throw:
                if throwRefuses { routes.append(route) }
                return (routes, throwRefuses || !routes.isEmpty)
            default:
                continue
            }
        }
        return (routes, !routes.isEmpty)
    }

    /// Whether `rule` selects a packet to the internet that a socket of `userID`, bound to no
    /// link, sends from this host without a firewall mark, as the kernel's `fib_rule_match`
    /// judges it: input link `lo`, no output link, mark 0, no tunnel, type of service 0, source
    /// address not chosen yet (0), any destination, protocol and port. A rule that selects by
    /// destination prefix, protocol, port or a field the library does not model selects only
    /// part of that traffic, and is taken not to select it (and, inverted, to select it).
    public static func ruleSelectsInternetTraffic(_ rule: PolicyRule, userID: UInt32) -> Bool {
        var selects = true
        if let name = rule.inputLinkName, name != "lo" || rule.linkIsMissing { selects = false }
        if rule.outputLinkName != nil { selects = false }
        if rule.firewallMark & rule.firewallMask != 0 { selects = false }
        if let users = rule.userIDs, !users.contains(userID) { selects = false }
        if let source = rule.source, !source.contains(rule.family == .ipv4 ? .v4(.any) : .v6(.any)) { selects = false }
        if let destination = rule.destination, destination.prefixLength > 0 { selects = false }
        if rule.tos != 0 || rule.ipProtocol != nil || rule.sourcePorts != nil || rule.destinationPorts != nil
            || rule.selectsByOtherFields {
            selects = false
        }
        return selects != rule.isInverted
    }
}
