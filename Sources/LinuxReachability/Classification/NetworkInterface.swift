/// A link that an answer or a path goes through: NWInterface's name, index and type, with
/// the link's whole classification.
public struct NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    /// The interface name.
    public var name: String
    /// The interface index.
    public var index: Int32
    /// The link's classification.
    public var classification: LinkClassification
    /// The link's type.
    public var type: InterfaceType { classification.type }

    /// An interface as given.
    package init(name: String, index: Int32, classification: LinkClassification) {
        self.name = name
        self.index = index
        self.classification = classification
    }

    /// The name.
    public var description: String { name }
}
