extension KernelStateModel {
    /// Gives `route`, a new IPv4 route, its ``Route/tieOrder`` among the kept routes of its
    /// prefix part, as the kernel inserts it: last for `ip route append` (`NLM_F_APPEND`),
    /// first otherwise (`ip route prepend`, or the first of its prefix part). The routes it goes
    /// before move one place down, each reported changed.
    mutating func placeAmongTies(_ route: inout Route, appended: Bool) {
        let ties = keptTies(of: route.key.prefixPart)
        if appended {
            route.tieOrder = ties.count
            return
        }
        route.tieOrder = 0
        for (key, old) in ties.sorted(by: { $0.value.tieOrder > $1.value.tieOrder }) {
            move(old, at: key, to: old.tieOrder + 1)
        }
    }

    /// Numbers the kept IPv4 routes of prefix part `part` 0, 1, ... in their order, after some
    /// went away, reporting each whose place changed.
    mutating func closeTieGaps(of part: Route.Key) {
        guard part.family == .ipv4 else { return }
        let ties = keptTies(of: part)
            .sorted { ($0.value.tieOrder, $0.value.outputLinkIndex ?? 0) < ($1.value.tieOrder, $1.value.outputLinkIndex ?? 0) }
        for (position, (key, old)) in ties.enumerated() where old.tieOrder != position {
            move(old, at: key, to: position)
        }
    }

    /// The kept routes of prefix part `part`, by key.
    private func keptTies(of part: Route.Key) -> [Route.Key: Route] {
        state.defaultRoutes.filter { $0.key.prefixPart == part }
    }

    /// Gives the kept route `old`, stored at `key`, the place `position`, reporting the change.
    private mutating func move(_ old: Route, at key: Route.Key, to position: Int) {
        var moved = old
        moved.tieOrder = position
        state.defaultRoutes[key] = moved
        events.append(.route(.changed(old: old, new: moved)))
    }
}
