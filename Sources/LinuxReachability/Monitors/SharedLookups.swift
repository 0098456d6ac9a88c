import Netlink

// When one lookup may answer for many targets.
//
// Ten thousand watched addresses and one default route replaced: asking the kernel ten
// thousand times costs more than 20 ms on its own. Most of those addresses reached the kernel's
// answer through the same FIB entry (the default route of the main table), and for them one
// lookup can stand for all, under the conditions below, which the engine checks each round.
//
// Let a round's changes be only default routes of one table T of one family, and let the
// addresses of a group have matched T's default route at their last lookup, with the policy
// rules unchanged since. Then, for each of them, every table consulted before T in its rule
// walk is unchanged and still has no answer for it; T has no entry more specific than its
// default route that contains it (it had none, and only default routes changed); so if one
// lookup's FIB entry is again a default route of T with at most one next hop, every address of
// the group ends at that same entry, through the same next hop, and its answer is that
// lookup's with its own destination. The prefix length is the same (zero), so rules with
// `suppress_prefixlength` treat every address alike; rules with `suppress_ifgroup` could
// reject the new entry for some walks and not others, so a rule set with one is never
// shared. Anything else (a multipath entry, whose next hop depends on the address; an entry
// in another table; a rule set that changed) and the group is looked up address by address.

/// The FIB entry that a watched address matched at its last lookup (`RTM_F_FIB_MATCH`).
struct MatchedEntry: Sendable, Hashable {
    /// The table the entry lives in.
    var table: RouteTable
    /// The entry's prefix.
    var prefix: IPNetwork

    /// The entry of a FIB-match lookup's answer; nil for an error answer.
    init?(_ result: RouteLookupResult) {
        guard case .route(let route) = result else { return nil }
        table = route.table
        prefix = route.destination
    }
}

/// A routing table of one family.
struct FamilyTable: Sendable, Hashable {
    var family: AddressFamily
    var table: RouteTable
}

/// The tables whose default routes changed since the last round, as far as a round needs to
/// know: whether exactly one did, and which.
///
/// Not a `Set<FamilyTable>`: the Swift runtime, making a set's storage type, checks that its
/// element is `Hashable` with a search of every protocol conformance in the process, some
/// 376 000 instructions in the middle of a process's first change of a default route.
enum ChangedDefaultTables: Sendable {
    case none
    case one(FamilyTable)
    case several

    /// Notes that `table`'s default routes changed.
    mutating func insert(_ table: FamilyTable) {
        switch self {
        case .none: self = .one(table)
        case .one(let noted) where noted != table: self = .several
        case .one, .several: break
        }
    }

    /// The one table whose default routes changed, if only one did.
    var sole: FamilyTable? {
        if case .one(let table) = self { table } else { nil }
    }
}

/// One lookup's answer, given to every address of a group.
struct SharedAnswer {
    /// The representative's answer.
    var result: RouteLookupResult
    /// The entry it matched: the group's entry from now on.
    var entry: MatchedEntry

    /// Asks the kernel for `representative`'s route and FIB entry, and returns them if the
    /// entry is a default route of `table` with at most one next hop (see above).
    init?(representative: IPAddress, table: FamilyTable, connection: NetlinkConnection) {
        guard let answer = try? connection.lookupRoutes(to: [representative]).first,
              let fib = try? connection.lookupFIBEntries(to: [representative]).first,
              case .route(let entry) = fib, entry.table == table.table, entry.family == table.family,
              entry.isDefault, entry.nexthops.count <= 1, entry.type != .throw,
              case .route(let route) = answer, route.table == table.table,
              let matched = MatchedEntry(fib) else { return nil }
        result = .route(route)
        self.entry = matched
    }
}
