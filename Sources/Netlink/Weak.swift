/// A weak reference, for registries that find an object while something else keeps it (a
/// namespace's subscription, engine or evaluation queue).
package struct Weak<Object: AnyObject & Sendable>: Sendable {
    /// The object, while it lives.
    package weak var value: Object?

    /// A weak reference to `value`.
    package init(_ value: Object) { self.value = value }
}
