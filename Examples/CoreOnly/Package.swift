// swift-tools-version: 6.1
// A program that depends on the core library only: it fetches swift-log and nothing else, and
// does not link Foundation.
import PackageDescription

let package = Package(
    name: "CoreOnly",
    dependencies: [.package(name: "swift-linux-reachability", path: "../..")],
    targets: [
        .executableTarget(name: "CoreOnly", dependencies: [
            .product(name: "LinuxReachability", package: "swift-linux-reachability"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
