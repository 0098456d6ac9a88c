import Testing
import Netlink
import LinuxReachability
import ReachabilityCompat

/// Every status mapping over the full table of flag combinations, against a transcription of
/// each library's own logic.
@Suite("Statuses")
struct StatusTests {
    /// All 512 combinations of the nine flags.
    static let allFlags: [ReachabilityFlags] = {
        let bits: [ReachabilityFlags] = [.transientConnection, .reachable, .connectionRequired, .connectionOnTraffic,
                                         .interventionRequired, .connectionOnDemand, .isLocalAddress, .isDirect, .isWWAN]
        return (0..<(1 << bits.count)).map { mask in
            bits.enumerated().reduce(into: ReachabilityFlags()) { flags, bit in
                if mask & (1 << bit.offset) != 0 { flags.insert(bit.element) }
            }
        }
    }()

    @Test func flagBitsAndNamesAreApples() {
        #expect(ReachabilityFlags.transientConnection.rawValue == 1 << 0)
        #expect(ReachabilityFlags.reachable.rawValue == 1 << 1)
        #expect(ReachabilityFlags.connectionRequired.rawValue == 1 << 2)
        #expect(ReachabilityFlags.connectionOnTraffic.rawValue == 1 << 3)
        #expect(ReachabilityFlags.interventionRequired.rawValue == 1 << 4)
        #expect(ReachabilityFlags.connectionOnDemand.rawValue == 1 << 5)
        #expect(ReachabilityFlags.isLocalAddress.rawValue == 1 << 16)
        #expect(ReachabilityFlags.isDirect.rawValue == 1 << 17)
        #expect(ReachabilityFlags.isWWAN.rawValue == 1 << 18)
        #expect(ReachabilityFlags.connectionAutomatic == .connectionOnTraffic)
        #expect(ReachabilityFlags([.reachable, .isDirect]).description == "[.reachable, .isDirect]")
        #expect(ReachabilityFlags([]).description == "[]")
        #expect(ReachabilityFlags([.reachable, .isDirect]).compactDescription == "-R ------d")
        #expect(ReachabilityFlags([.isWWAN, .reachable, .transientConnection, .connectionRequired, .connectionOnTraffic,
                                   .interventionRequired, .connectionOnDemand, .isLocalAddress, .isDirect])
                    .compactDescription == "WR tcCiDld")
    }

    @Test(arguments: allFlags)
    func everyMappingFollowsItsSource(_ flags: ReachabilityFlags) {
        let reachable = flags.contains(.reachable)
        let required = flags.contains(.connectionRequired)
        let automatic = flags.contains(.connectionOnDemand) || flags.contains(.connectionOnTraffic)
        let intervention = flags.contains(.interventionRequired)
        let wwan = flags.contains(.isWWAN)
        let actually = reachable && (!required || (automatic && !intervention))
        #expect(flags.isActuallyReachable == actually)

        // Apple's sample (and Nexum): WWAN is checked last and wins.
        var apple = NetworkStatus.notReachable
        if reachable {
            if !required { apple = .reachableViaWiFi }
            if automatic && !intervention { apple = .reachableViaWiFi }
            if wwan { apple = .reachableViaWWAN }
        }
        #expect(NetworkStatus(flags: flags) == apple)

        // Alamofire: only "actually reachable" counts.
        #expect(NetworkReachabilityStatus(flags: flags)
                    == (actually ? .reachable(wwan ? .cellular : .ethernetOrWiFi) : .notReachable))

        // FXReachability.
        let fx: FXReachabilityStatus = !reachable || required ? .notReachable : wwan ? .reachableViaWWAN : .reachableViaWiFi
        #expect(FXReachabilityStatus(flags: flags) == fx)

        // Ola: WWAN first.
        #expect(OlaStatus(flags: flags) == (wwan ? .cellular : reachable ? .reachable : .unknown))

        // Reachability.swift, with and without cellular allowed.
        let connection: ReachabilityConnection = apple == .reachableViaWWAN ? .cellular
            : apple == .reachableViaWiFi ? .wifi : .unavailable
        #expect(ReachabilityConnection(flags: flags) == connection)
        #expect(ReachabilityConnection(flags: flags, allowsCellularConnection: false)
                    == (connection == .cellular ? .unavailable : connection))

        // Ours: Ethernet is not Wi-Fi.
        for type in InterfaceType.allCases {
            let ours = ReachabilityStatus(flags: flags, interfaceType: type)
            if !actually { #expect(ours == .notReachable); continue }
            switch (wwan, type) {
            case (true, _), (false, .cellular): #expect(ours == .reachableViaWWAN)
            case (false, .wifi): #expect(ours == .reachableViaWiFi)
            case (false, .wiredEthernet): #expect(ours == .reachableViaWired)
            default: #expect(ours == .reachableViaOther)
            }
        }
    }

    @Test func theDifferencesBetweenLibrariesAreReal() {
        let wwanNeedsConnection: ReachabilityFlags = [.reachable, .connectionRequired, .isWWAN]
        #expect(NetworkStatus(flags: wwanNeedsConnection) == .reachableViaWWAN)
        #expect(NetworkReachabilityStatus(flags: wwanNeedsConnection) == .notReachable)
        #expect(FXReachabilityStatus(flags: wwanNeedsConnection) == .notReachable)
        #expect(FXReachabilityStatus.unknown.isReachable)
        #expect(!FXReachabilityStatus.notReachable.isReachable)
        #expect(ReachabilityStatus(flags: [.reachable, .isDirect], interfaceType: .wiredEthernet) == .reachableViaWired)
        #expect(NetworkStatus(flags: [.reachable, .isDirect]) == .reachableViaWiFi)
    }
}
