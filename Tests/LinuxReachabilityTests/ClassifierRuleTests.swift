import Testing
import Netlink
import LinuxReachability

/// The order of evidence, rule by rule, on hand-made facts.
@Suite("Classifier rules")
struct ClassifierRuleTests {
    private func facts(_ name: String = "x0", index: Int32 = 10, arphrd: ARPHRDType = .ether, kind: String? = nil,
                       master: Int32? = nil, lower: Int32? = nil, sysfs: SysfsFacts = .absent) -> LinkFacts {
        LinkFacts(index: index, name: name, arphrdType: arphrd, kind: kind, masterIndex: master,
                  lowerLinkIndex: lower, sysfs: sysfs)
    }

    private let virtualSysfs = SysfsFacts(isPresent: true)
    private func device(_ driver: String?, bus: String? = "usb", deviceType: String? = nil) -> SysfsFacts {
        SysfsFacts(isPresent: true, deviceType: deviceType, hasDevice: true, driver: driver, bus: bus)
    }

    @Test func radioEvidenceOutranksTheRtnetlinkKind() {
        let wifi = LinkClassifier.classify(facts("wlan0", kind: "veth", sysfs: SysfsFacts(isPresent: true, hasPhy80211: true)))
        #expect((wifi.type, wifi.kind, wifi.evidence) == (.wifi, .wifi, .phy80211))
        let wext = LinkClassifier.classify(facts(kind: "veth", sysfs: SysfsFacts(isPresent: true, hasWirelessDirectory: true)))
        #expect((wext.type, wext.evidence) == (.wifi, .wirelessDirectory))
        let modem = LinkClassifier.classify(facts("wwan0", kind: "veth", sysfs: SysfsFacts(isPresent: true, deviceType: "wwan")))
        #expect((modem.type, modem.kind, modem.isExpensive) == (.cellular, .wwan, true))
        #expect(modem.evidence == .deviceType("wwan"))
        #expect(LinkClassifier.classify(facts(sysfs: device("r8152", deviceType: "wlan"))).type == .wifi)
    }

    @Test func loopbackIsDecidedByTheLinkType() {
        let answer = LinkClassifier.classify(facts("lo", index: 1, arphrd: .loopback))
        #expect((answer.type, answer.kind, answer.isVirtual) == (.loopback, .loopback, true))
        // A link merely named lo is not loopback.
        #expect(LinkClassifier.classify(facts("lo0", kind: "veth")).type == .other)
    }

    @Test func cellularWithoutARadioDeviceType() {
        #expect(LinkClassifier.classify(facts(arphrd: .none, kind: "wwan")).evidence == .rtnetlinkKind("wwan"))
        #expect(LinkClassifier.classify(facts(arphrd: .rawIP, kind: "rmnet")).type == .cellular)
        // Vendor kernels' raw IP from before mainline numbered it (rmnet_data0 on Android).
        let vendor = LinkClassifier.classify(facts("rmnet_data0", arphrd: ARPHRDType(rawValue: 530)))
        #expect((vendor.type, vendor.evidence) == (.cellular, .linkType(ARPHRDType(rawValue: 530))))
        let rawIP = LinkClassifier.classify(facts(arphrd: .rawIP))
        #expect((rawIP.type, rawIP.evidence) == (.cellular, .linkType(.rawIP)))
        let driver = LinkClassifier.classify(facts(arphrd: .none, sysfs: device("sierra_net")))
        #expect((driver.type, driver.evidence, driver.isVirtual) == (.cellular, .modemDriver("sierra_net"), false))
        #expect(LinkClassifier.classify(facts(arphrd: .none, sysfs: device(nil, bus: "wwan"))).evidence == .wwanDevice)
        // ARPHRD_NONE alone is not cellular: tun and WireGuard use it too.
        #expect(LinkClassifier.classify(facts(arphrd: .none, sysfs: virtualSysfs)).type == .other)
    }

    @Test func virtualKindsAreDecidedByKind() {
        let tun = LinkClassifier.classify(facts("tun0", arphrd: .none, kind: "tun"))
        #expect((tun.type, tun.kind, tun.isTransient, tun.isVirtual) == (.other, .tun, true, true))
        // OpenVPN's data channel in the kernel: `ovpn_setup` (Linux 6.16) gives ARPHRD_NONE, a
        // point-to-point link without a parent device, kind `ovpn` and DEVTYPE=ovpn; the
        // out-of-tree module's kind is `ovpn-dco`. A VPN tunnel, so answers through it are
        // transient, as through OpenVPN's tun.
        for kind in ["ovpn", "ovpn-dco"] {
            let ovpn = LinkClassifier.classify(facts("ovpn0", arphrd: .none, kind: kind))
            #expect((ovpn.type, ovpn.kind, ovpn.isTransient, ovpn.isVirtual) == (.other, .tun, true, true), "\(kind)")
        }
        let byDeviceType = LinkClassifier.classify(facts("ovpn1", arphrd: .none, sysfs: SysfsFacts(isPresent: true, deviceType: "ovpn")))
        #expect((byDeviceType.kind, byDeviceType.isTransient) == (.tun, true))
        let veth = LinkClassifier.classify(facts("eth0", kind: "veth", sysfs: virtualSysfs))
        #expect((veth.type, veth.kind, veth.isTransient, veth.isExpensive) == (.other, .veth, false, false))
        // An unknown kind falls through to the later rules.
        let unknown = LinkClassifier.classify(facts(kind: "frobnicator", sysfs: device("e1000e", bus: "pci")))
        #expect((unknown.type, unknown.kind) == (.wiredEthernet, .ethernet))
        #expect(LinkClassifier.classify(facts(kind: "frobnicator")).isVirtual)
        // Without sysfs, virtual by the kind string: rmnet's links (cellular) and vcan, vxcan
        // (CAN) have no parent device; the WWAN framework's, CAN controllers' and IPoIB's have.
        for kind in ["rmnet", "vcan", "vxcan", "veth"] {
            #expect(LinkClassifier.classify(facts(arphrd: .rawIP, kind: kind)).isVirtual, "\(kind)")
        }
        for kind in ["wwan", "can", "ipoib"] {
            #expect(!LinkClassifier.classify(facts(arphrd: .none, kind: kind)).isVirtual, "\(kind)")
        }
    }

    @Test func otherDeviceTypesAndLinkTypes() {
        let pan = LinkClassifier.classify(facts("bnep0", sysfs: device(nil, bus: "bluetooth", deviceType: "bluetooth")))
        #expect((pan.type, pan.kind, pan.isExpensive, pan.isVirtual) == (.other, .bluetooth, true, false))
        // IPv6 over Bluetooth Low Energy has DEVTYPE=bluetooth too, on a 6LoWPAN link (825):
        // a link to sensors, not a phone's uplink.
        let sensors = LinkClassifier.classify(facts("bt0", arphrd: ARPHRDType(rawValue: 825),
                                                    sysfs: device(nil, bus: nil, deviceType: "bluetooth")))
        #expect((sensors.type, sensors.kind, sensors.isExpensive, sensors.isVirtual) == (.other, .other, false, false))
        #expect(LinkClassifier.classify(facts("ppp0", arphrd: .ppp)).kind == .ppp)
        #expect(LinkClassifier.classify(facts("ppp0", arphrd: .ppp)).isTransient)
        #expect(LinkClassifier.classify(facts("ib0", arphrd: .infiniband, sysfs: device("mlx5_core", bus: "pci"))).kind == .infiniband)
        #expect(LinkClassifier.classify(facts("can0", arphrd: .can)).kind == .can)
        #expect(LinkClassifier.classify(facts("mon0", arphrd: .ieee80211Radiotap)).type == .wifi)
        #expect(LinkClassifier.classify(facts("gre1", arphrd: .ipGRE)).kind == .tunnel)
    }

    @Test func ethernetWithAPhysicalDeviceIsWiredAndTetheringIsExpensive() {
        let nic = LinkClassifier.classify(facts("enp3s0", sysfs: device("igb", bus: "pci")))
        #expect((nic.type, nic.kind, nic.isExpensive, nic.isVirtual) == (.wiredEthernet, .ethernet, false, false))
        #expect(nic.evidence == .physicalDevice(driver: "igb", bus: "pci"))
        for driver in ["ipheth", "rndis_host"] {
            let phone = LinkClassifier.classify(facts("usb0", sysfs: device(driver)))
            #expect((phone.type, phone.isExpensive) == (.wiredEthernet, true), "\(driver)")
        }
        // A physical device with another link type is not wired Ethernet.
        #expect(LinkClassifier.classify(facts(arphrd: .none, sysfs: device("mystery"))).type == .other)
    }

    @Test func namePrefixesOnlyWithoutAnySysfsEvidence() {
        #expect(LinkClassifier.classify(facts("wlan0")).evidence == .namePrefix("wl"))
        #expect(LinkClassifier.classify(facts("wwan0")).type == .cellular)
        #expect(LinkClassifier.classify(facts("enp1s0")).type == .wiredEthernet)
        #expect(LinkClassifier.classify(facts("eth0")).type == .wiredEthernet)
        // Sysfs was read and shows a virtual link: the name means nothing.
        #expect(LinkClassifier.classify(facts("wlan0", sysfs: virtualSysfs)).type == .other)
        // A kind outranks the name; prefixes count for Ethernet-type links, and `ww` also for a
        // raw-IP modem link without a link layer.
        #expect(LinkClassifier.classify(facts("wlan0", kind: "veth")).type == .other)
        #expect(LinkClassifier.classify(facts("wwan0", arphrd: .none)).type == .cellular)
        #expect(LinkClassifier.classify(facts("wlan0", arphrd: .none)).type == .other)
        #expect(LinkClassifier.classify(facts("wwan0", arphrd: .none, sysfs: virtualSysfs)).type == .other)
        #expect(LinkClassifier.classify(facts("wwan0", arphrd: .none, kind: "tun")).type == .other)
        #expect(LinkClassifier.classify(facts("wl")).type == .other)
    }

    @Test func vlanAndMacvlanInheritTheirLowerLink() {
        let wifi = facts("wlan0", index: 2, sysfs: SysfsFacts(isPresent: true, hasPhy80211: true, hasDevice: true))
        let vlan = facts("wlan0.5", index: 3, kind: "vlan", lower: 2, sysfs: virtualSysfs)
        let macvlan = facts("mv0", index: 4, kind: "macvlan", lower: 3, sysfs: virtualSysfs)
        let answers = LinkClassifier.classify([wifi, vlan, macvlan])
        #expect((answers[3]?.type, answers[3]?.kind, answers[3]?.evidence) == (.wifi, .vlan, .lowerLink(2)))
        #expect((answers[4]?.type, answers[4]?.kind) == (.wifi, .macvlan))
        // Alone, without its lower link, a VLAN is other.
        #expect(LinkClassifier.classify([vlan])[3]?.type == .other)
        // A cellular lower link makes the stacked link expensive too.
        let modem = facts("wwan0", index: 2, arphrd: .rawIP)
        #expect(LinkClassifier.classify([modem, vlan])[3]?.isExpensive == true)
        // MACsec sends through its real device, as a VLAN does; its kind stays other.
        let nic = facts("enp3s0", index: 5, sysfs: device("igb", bus: "pci"))
        let macsec = facts("macsec0", index: 6, kind: "macsec", lower: 5, sysfs: virtualSysfs)
        let secured = LinkClassifier.classify([nic, macsec])
        #expect((secured[6]?.type, secured[6]?.kind, secured[6]?.evidence) == (.wiredEthernet, .other, .lowerLink(5)))
        #expect(LinkClassifier.classify([macsec])[6]?.type == .other)
        // Its lower link in another namespace (an index this one does not have): other.
        #expect(LinkClassifier.classify([macsec, facts("enp3s0", index: 7, sysfs: device("igb", bus: "pci"))])[6]?.type == .other)
    }

    @Test func bridgesAndBondsTakeTheTypeTheirPortsAgreeOn() {
        let bridge = facts("br0", index: 2, kind: "bridge", sysfs: virtualSysfs)
        let nic = facts("enp3s0", index: 3, master: 2, sysfs: device("igb", bus: "pci"))
        let tap = facts("tap0", index: 4, kind: "tun", master: 2, sysfs: virtualSysfs)
        let veth = facts("veth1", index: 5, kind: "veth", master: 2, sysfs: virtualSysfs)
        let wifi = facts("wlan0", index: 6, master: 2, sysfs: SysfsFacts(isPresent: true, hasPhy80211: true, hasDevice: true))

        // Ports without a type (taps, veths) do not vote.
        let vmHost = LinkClassifier.classify([bridge, nic, tap, veth])
        #expect((vmHost[2]?.type, vmHost[2]?.kind, vmHost[2]?.evidence) == (.wiredEthernet, .bridge, .ports([3])))
        // Only typeless ports (docker0 with veths): other.
        #expect(LinkClassifier.classify([bridge, veth])[2]?.type == .other)
        // Ports that disagree: other.
        #expect(LinkClassifier.classify([bridge, nic, wifi])[2]?.type == .other)
        // No ports at all: other.
        #expect(LinkClassifier.classify([bridge])[2]?.type == .other)

        let bond = facts("bond0", index: 7, kind: "bond", sysfs: virtualSysfs)
        let phone = facts("usb0", index: 8, master: 7, sysfs: device("rndis_host"))
        let nic2 = facts("enp4s0", index: 9, master: 7, sysfs: device("e1000e", bus: "pci"))
        let bonded = LinkClassifier.classify([bond, phone, nic2])
        #expect((bonded[7]?.type, bonded[7]?.isExpensive, bonded[7]?.evidence) == (.wiredEthernet, true, .ports([8, 9])))

        // batman-adv's mesh interface sends through its hard interfaces, its ports: a Wi-Fi mesh.
        let mesh = facts("bat0", index: 10, kind: "batadv", sysfs: virtualSysfs)
        let radio = facts("mesh0", index: 11, master: 10, sysfs: SysfsFacts(isPresent: true, hasPhy80211: true, hasDevice: true))
        let meshed = LinkClassifier.classify([mesh, radio])
        #expect((meshed[10]?.type, meshed[10]?.kind, meshed[10]?.evidence) == (.wifi, .other, .ports([11])))
        #expect(LinkClassifier.classify([mesh])[10]?.type == .other)
    }

    @Test func stackedLinksSurviveCyclesAndDeepChains() {
        // The kernel forbids both; a hand-made or corrupt set must still get an answer.
        let a = facts("a", index: 2, kind: "vlan", lower: 3)
        let b = facts("b", index: 3, kind: "vlan", lower: 2)
        let self1 = facts("c", index: 4, kind: "bridge", master: 4)
        let answers = LinkClassifier.classify([a, b, self1])
        #expect(answers.count == 3)
        #expect(answers.values.allSatisfy { $0.type == .other })

        var chain = [facts("enp1s0", index: 1, sysfs: device("igb", bus: "pci"))]
        for index in Int32(2)...200 { chain.append(facts("v\(index)", index: index, kind: "vlan", lower: index - 1)) }
        let deep = LinkClassifier.classify(chain)
        #expect(deep.count == 200)
        #expect(deep[10]?.type == .wiredEthernet)
    }

    @Test func constrainedComesFromThePolicyAndFromTheLinksAStackedLinkSendsThrough() throws {
        let policy = try ConstrainedLinkPolicy(parsing: "usb*, type:cellular # metered\nkind:bluetooth")
        let answers = LinkClassifier.classify([
            facts("usb0", index: 2, sysfs: device("rndis_host")),
            facts("wwan0", index: 3, arphrd: .rawIP),
            facts("bnep0", index: 4, sysfs: device(nil, deviceType: "bluetooth")),
            facts("enp3s0", index: 5, sysfs: device("igb", bus: "pci")),
        ], policy: policy)
        #expect(answers.sorted { $0.key < $1.key }.map(\.value.isConstrained) == [true, true, true, false])
        #expect(LinkClassifier.classify([facts("usb0", index: 2)])[2]?.isConstrained == false)
        // A bridge whose port is a constrained phone tether, and a VLAN on it: their traffic
        // leaves through usb0, so they are constrained too, as they are expensive.
        let stacked = LinkClassifier.classify([
            facts("usb0", index: 2, master: 6, sysfs: device("rndis_host")),
            facts("br0", index: 6, kind: "bridge", sysfs: virtualSysfs),
            facts("br0.7", index: 7, kind: "vlan", lower: 6, sysfs: virtualSysfs),
            facts("br1", index: 8, kind: "bridge", sysfs: virtualSysfs),
        ], policy: policy)
        #expect(stacked[6]?.isExpensive == true && stacked[6]?.isConstrained == true)
        #expect(stacked[7]?.isExpensive == true && stacked[7]?.isConstrained == true)
        #expect(stacked[8]?.isConstrained == false)
    }
}
