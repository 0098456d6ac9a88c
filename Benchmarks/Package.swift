// swift-tools-version: 6.1
// The library's benchmarks, kept out of the main package (and out of CI): run them with
// `swift package benchmark` here, or `./compare.sh` for the table beside the peers.
import PackageDescription

/// The library's modules, which the targets here measure (the compatibility module for the
/// notifications' cost).
let library: [Target.Dependency] = [
    .product(name: "Netlink", package: "swift-linux-reachability"),
    .product(name: "LinuxReachability", package: "swift-linux-reachability"),
    .product(name: "ReachabilityCompat", package: "swift-linux-reachability"),
]

let package = Package(
    name: "ReachabilityBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The tool is built here too (compare.sh), with the trait that brings its parser.
        .package(name: "swift-linux-reachability", path: "..", traits: ["CommandLineTool"]),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "ReachabilityBenchmarks",
            dependencies: [.product(name: "Benchmark", package: "benchmark")] + library,
            path: "Benchmarks/ReachabilityBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The library with a callback that only prints a line, for the latency harness. Not
        // directly in a folder named Benchmarks: the benchmark plugin runs every executable there.
        .executableTarget(
            name: "latency-listener",
            dependencies: library,
            path: "Tools/LatencyListener"
        ),
        // Fresh lookups in a loop, timed as the bare-C raw_lookup is, for compare.py's
        // alternating rounds of the two.
        .executableTarget(
            name: "lookup-loop",
            dependencies: library,
            path: "Tools/LookupLoop"
        ),
    ],
    swiftLanguageModes: [.v6]
)
