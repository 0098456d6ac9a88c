// swift-tools-version: 6.1
// A service that runs a reachability monitor in a ServiceGroup and stops on SIGTERM.
import PackageDescription

let package = Package(
    name: "ServiceStop",
    dependencies: [
        .package(name: "swift-linux-reachability", path: "../..", traits: ["ServiceLifecycle"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .executableTarget(name: "ServiceStop", dependencies: [
            .product(name: "ReachabilityService", package: "swift-linux-reachability"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
