// The values the monitors' API takes, so that `import LinuxReachability` is enough to name a
// target (`ReachabilityMonitor(address: IPAddress("192.0.2.1")!)`) or a namespace
// (`namespace: .named("blue")`). The rest of the Netlink overlay is imported on its own.
@_exported import enum Netlink.IPAddress
@_exported import struct Netlink.NetworkNamespace
