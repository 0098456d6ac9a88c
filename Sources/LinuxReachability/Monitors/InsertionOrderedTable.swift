/// A dictionary that iterates in the order its keys were inserted, with removal in constant
/// amortized time.
///
/// The engine keeps its watched targets in one. An evaluation round walks every entry several
/// times (which can change, which share a lookup, storing answers, telling watchers), and each
/// entry leads to objects allocated when its target was first watched: the entry, its watchers'
/// closures, the monitors. Walked in a `Dictionary`'s hash order, those objects are visited at
/// random addresses, and with 10 000 monitors almost every visit waited for main memory, one
/// after the other (the reference counting's atomic instructions keep the processor from
/// overlapping them). Walked in insertion order, which is allocation order, the addresses
/// mostly rise and the hardware prefetcher has them ready (BENCHMARKS.md, 10 000 monitors).
///
/// A removed key leaves a hole, skipped while iterating; the holes are squeezed out, in order,
/// once they are more than half of the slots.
struct InsertionOrderedTable<Key: Hashable, Value>: Sequence {
    /// Where each key's slot is.
    private var positions: [Key: Int] = [:]
    /// The keys and values in insertion order; nil where one was removed.
    private var slots: [(key: Key, value: Value)?] = []
    private var holes = 0

    /// An empty table.
    init() {}

    /// How many keys the table holds.
    var count: Int { positions.count }

    /// Whether the table holds no key.
    var isEmpty: Bool { positions.isEmpty }

    /// The value for `key`. Setting a new key appends it; setting a present key replaces its
    /// value in its place; setting nil removes it.
    subscript(key: Key) -> Value? {
        get { positions[key].map { slots[$0]!.value } }
        set {
            guard let newValue else { return remove(key) }
            if let position = positions[key] {
                slots[position] = (key, newValue)
            } else {
                positions[key] = slots.count
                slots.append((key, newValue))
            }
        }
    }

    private mutating func remove(_ key: Key) {
        guard let position = positions.removeValue(forKey: key) else { return }
        slots[position] = nil
        holes += 1
        if holes > 16, holes * 2 > slots.count { squeeze() }
    }

    /// Drops the holes, keeping the order.
    private mutating func squeeze() {
        slots.removeAll { $0 == nil }
        for (position, slot) in slots.enumerated() { positions[slot!.key] = position }
        holes = 0
    }

    /// The keys, in insertion order.
    var keys: LazyMapSequence<Self, Key> { lazy.map(\.key) }

    /// The values, in their keys' insertion order.
    var values: LazyMapSequence<Self, Value> { lazy.map(\.value) }

    /// Iterates the keys and values in insertion order.
    struct Iterator: IteratorProtocol {
        fileprivate var slots: IndexingIterator<[(key: Key, value: Value)?]>

        mutating func next() -> (key: Key, value: Value)? {
            while let slot = slots.next() {
                if let slot { return slot }
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(slots: slots.makeIterator()) }

    var underestimatedCount: Int { count }
}
