// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "swift-linux-reachability",
    products: [
        .library(name: "Netlink", targets: ["Netlink"]),
        .library(name: "LinuxReachability", targets: ["LinuxReachability"]),
        .library(name: "ReachabilityCompat", targets: ["ReachabilityCompat"]),
        .library(name: "ReachabilityService", targets: ["ReachabilityService"]),
        .library(name: "ReachabilityConnectivity", targets: ["ReachabilityConnectivity"]),
        .executable(name: "reach", targets: ["reach"]),
    ],
    traits: [
        // The command-line tool's own dependency: a program that uses the libraries fetches
        // and builds nothing for it. This repository's scripts build with it.
        .trait(name: "CommandLineTool", description: "Builds reach, the command-line tool, with swift-argument-parser."),
        // The service of ReachabilityService, with swift-service-lifecycle.
        .trait(name: "ServiceLifecycle", description: "Builds ReachabilityService's Service, with swift-service-lifecycle."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // `swift package generate-documentation` for the DocC catalogs.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // libnl-3 and libnl-route-3, seen through one module map and one shim header.
        .systemLibrary(
            name: "CNetlink",
            path: "modulemaps/CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        // c-ares, for name lookups with a namespace's own resolv.conf.
        .systemLibrary(
            name: "CAres",
            path: "modulemaps/CAres",
            pkgConfig: "libcares",
            providers: [.apt(["libc-ares-dev"])]
        ),
        // libcurl's headers, for the connectivity probe; the library is opened at run time.
        .systemLibrary(
            name: "CCurl",
            path: "modulemaps/CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The Swift overlay of libnl: the only module that imports CNetlink.
        .target(name: "Netlink", dependencies: ["CNetlink", .product(name: "Logging", package: "swift-log")]),
        // What the kernel facts mean for reachability.
        .target(name: "LinuxReachability", dependencies: ["Netlink", "CAres", .product(name: "Logging", package: "swift-log")]),
        // The seed libraries' dialects: their statuses, notifications and middleware.
        .target(name: "ReachabilityCompat", dependencies: ["Netlink", "LinuxReachability"]),
        // The opt-in HTTP connectivity check: none, limited, portal or full.
        .target(name: "ReachabilityConnectivity", dependencies: [
            "Netlink", "LinuxReachability", "CCurl", .product(name: "Logging", package: "swift-log"),
        ]),
        // A monitor as a swift-service-lifecycle Service (with the ServiceLifecycle trait).
        .target(name: "ReachabilityService", dependencies: [
            "LinuxReachability", .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
        ]),
        // The command-line tool.
        .executableTarget(
            name: "reach",
            dependencies: [
                "Netlink",
                "LinuxReachability",
                "ReachabilityConnectivity",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["CommandLineTool"])),
            ]
        ),
        // Opens subscriptions from 8 threads under a descriptor limit (ResourceLimitTests).
        .executableTarget(name: "open-under-pressure", dependencies: ["Netlink"], path: "Tests/Tools/OpenUnderPressure"),
        // Uses every kind of monitor of a namespace and lets them go (EngineLifetimeTests).
        .executableTarget(name: "engine-lifetime", dependencies: ["Netlink", "LinuxReachability"], path: "Tests/Tools/EngineLifetime"),
        // Test bed: uniquely named network namespaces that tests build and always delete.
        .target(name: "NetnsTestSupport", dependencies: [.product(name: "Logging", package: "swift-log")], path: "Tests/NetnsTestSupport"),
        .testTarget(name: "NetlinkTests", dependencies: ["Netlink", "NetnsTestSupport", .product(name: "Logging", package: "swift-log")]),
        // Tests/Fixtures/sysfs (driver sysfs trees, with sysfs's own symlink loops) lies outside
        // every target on purpose: SwiftPM would follow the loops while scanning sources.
        .testTarget(name: "LinuxReachabilityTests", dependencies: [
            "LinuxReachability", "ReachabilityCompat", "NetnsTestSupport", .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ReachCLITests", dependencies: ["NetnsTestSupport"]),
        .testTarget(name: "ReachabilityConnectivityTests", dependencies: [
            "ReachabilityConnectivity", "LinuxReachability", "Netlink", "NetnsTestSupport",
        ]),
        .testTarget(name: "ReachabilityServiceTests", dependencies: [
            "ReachabilityService", "LinuxReachability", .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
        ]),
        // Property-based tests of every parser that takes outside data.
        .testTarget(
            name: "BadInputTests",
            dependencies: [
                "Netlink", "LinuxReachability", "NetnsTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            path: "Tests/BadInputTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
