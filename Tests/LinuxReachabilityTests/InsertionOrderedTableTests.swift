import NetnsTestSupport
@testable import LinuxReachability
import Testing

/// `InsertionOrderedTable` against a model (a dictionary and a list of keys in insertion
/// order) under random insertions, replacements and removals, across many squeezes of its
/// holes.
@Suite("Insertion-ordered table")
struct InsertionOrderedTableTests {
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func behavesAsADictionaryThatKeepsInsertionOrder(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var table = InsertionOrderedTable<Int, String>()
        var model: [Int: String] = [:]
        var order: [Int] = []
        // Phases that grow the table, then empty most of it (squeezing its holes), then grow it again.
        for (steps, removalShare) in [(2_000, 0.2), (3_000, 0.8), (2_000, 0.3), (3_000, 0.95)] {
            for step in 0..<steps {
                let key = Int.random(in: 0..<600, using: &random)
                if Double.random(in: 0..<1, using: &random) < removalShare {
                    table[key] = nil
                    model[key] = nil
                    order.removeAll { $0 == key }
                } else {
                    let value = "\(key)-\(step)"
                    if model[key] == nil { order.append(key) }
                    table[key] = value
                    model[key] = value
                }
                #expect(table[key] == model[key])
            }
            #expect(table.count == model.count)
            #expect(table.isEmpty == model.isEmpty)
            #expect(Array(table.keys) == order)
            #expect(Array(table.values) == order.map { model[$0]! })
            #expect(table.map(\.key) == order)
            for key in 0..<600 { #expect(table[key] == model[key]) }
        }
    }

    @Test func aReplacedValueKeepsItsPlaceAndARemovedKeyComesBackLast() {
        var table = InsertionOrderedTable<String, Int>()
        for (value, key) in ["a", "b", "c", "d"].enumerated() { table[key] = value }
        table["b"] = 20
        #expect(table.map(\.key) == ["a", "b", "c", "d"])
        #expect(table["b"] == 20)
        table["a"] = nil
        table["a"] = 10
        table["e"] = 4
        #expect(table.map(\.key) == ["b", "c", "d", "a", "e"])
        #expect(Array(table.values) == [20, 2, 3, 10, 4])
        table["zz"] = nil
        #expect(table.count == 5)
    }
}
