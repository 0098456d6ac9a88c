import CNetlink

/// Parses one rtnetlink message with libnl's parser for its type (`nl_msg_parse`), and hands
/// `body` the object (an `rtnl_link`, `rtnl_addr`, `rtnl_rule`, ...) while it lives; nil when
/// libnl has no parser for the type or refuses the message.
func withParsedObject<T>(_ message: OpaquePointer, _ body: (OpaquePointer) -> T?) -> T? {
    let box = ParsedObjectBox()
    let rc = withExtendedLifetime(box) {
        nl_msg_parse(message, { object, argument in
            let box = Unmanaged<ParsedObjectBox>.fromOpaque(argument!).takeUnretainedValue()
            guard box.object == nil, let object else { return }
            nl_object_get(object)
            box.object = object
        }, Unmanaged.passUnretained(box).toOpaque())
    }
    guard let object = box.object else { return nil }
    defer { nl_object_put(object) }
    return rc >= 0 ? body(object) : nil
}

/// Where `nl_msg_parse`'s callback leaves the object it was given.
private final class ParsedObjectBox {
    var object: OpaquePointer?
}
