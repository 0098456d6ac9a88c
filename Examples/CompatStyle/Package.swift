// swift-tools-version: 6.1
// A program written in Reachability.swift's style, on the compatibility product.
import PackageDescription

let package = Package(
    name: "CompatStyle",
    dependencies: [.package(name: "swift-linux-reachability", path: "../..")],
    targets: [
        .executableTarget(name: "CompatStyle", dependencies: [
            .product(name: "ReachabilityCompat", package: "swift-linux-reachability"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
