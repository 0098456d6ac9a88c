/// What sysfs says about one network link: the part of ``LinkFacts`` that rtnetlink does not
/// carry. Every field is evidence or its absence; nothing here is ever an error.
package struct SysfsFacts: Sendable, Hashable {
    /// Whether `class/net/NAME` existed. When `false`, sysfs gave no evidence at all (not
    /// mounted, a container without it, a fixture without the link) and every other field is
    /// at its default.
    package var isPresent: Bool
    /// `IFINDEX=` from the link's `uevent`, used to notice a stale entry after a rename.
    package var interfaceIndex: Int32?
    /// `DEVTYPE=` from the link's `uevent`: the `device_type` name the driver set with
    /// `SET_NETDEV_DEVTYPE`, such as `wlan`, `wwan`, `bluetooth`, `bridge`, `bond` or `vlan`.
    package var deviceType: String?
    /// Whether the link has a `phy80211` entry: it belongs to a cfg80211 (Wi-Fi) radio.
    package var hasPhy80211: Bool
    /// Whether the link has a `wireless/` directory: wireless extensions (or cfg80211's
    /// compatibility layer for them) serve it.
    package var hasWirelessDirectory: Bool
    /// Whether the link has a `device` entry, that is, a parent device (a PCI function, a USB
    /// interface, a WWAN port, ...). Virtual links have none.
    package var hasDevice: Bool
    /// The name of the driver bound to the parent device (the last component of the
    /// `device/driver` link), such as `iwlwifi`, `qmi_wwan` or `ipheth`.
    package var driver: String?
    /// The subsystem of the parent device (the last component of the `device/subsystem` link):
    /// a bus such as `pci`, `usb`, `sdio`, `virtio`, or a class such as `wwan` or `bluetooth`.
    package var bus: String?
    /// The links this one is stacked on, by name, sorted: its `lower_NAME` entries, which the
    /// kernel makes for each upper and lower link in one namespace (`netdev_upper_dev_link`).
    /// Read only for a link without a parent device or a `DEVTYPE`, the only sign of what some
    /// links ride on: the QMAP mux links that qmi_wwan makes itself (`qmimuxN`) have no kind,
    /// no parent device and no `IFLA_LINK`.
    package var lowerLinkNames: [String]

    /// Facts as given; the defaults are "no evidence".
    package init(isPresent: Bool = false, interfaceIndex: Int32? = nil, deviceType: String? = nil,
                hasPhy80211: Bool = false, hasWirelessDirectory: Bool = false, hasDevice: Bool = false,
                driver: String? = nil, bus: String? = nil, lowerLinkNames: [String] = []) {
        self.isPresent = isPresent
        self.interfaceIndex = interfaceIndex
        self.deviceType = deviceType
        self.hasPhy80211 = hasPhy80211
        self.hasWirelessDirectory = hasWirelessDirectory
        self.hasDevice = hasDevice
        self.driver = driver
        self.bus = bus
        self.lowerLinkNames = lowerLinkNames
    }

    /// No sysfs evidence: the link was not found in sysfs, or sysfs was not read.
    package static let absent = SysfsFacts()
}
