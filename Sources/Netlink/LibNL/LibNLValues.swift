import CNetlink
import Glibc

// Conversions from libnl objects to the library's values. Each takes a borrowed libnl pointer,
// copies what it needs and keeps no reference.

extension IPAddress {
    /// The address in a libnl `nl_addr` of family AF_INET or AF_INET6; nil for an empty one.
    init?(libnl addr: OpaquePointer?) {
        guard let addr, let binary = nl_addr_get_binary_addr(addr) else { return nil }
        let length = Int(nl_addr_get_len(addr))
        guard length == 4 || length == 16 else { return nil }
        self.init(octets: UnsafeRawBufferPointer(start: binary, count: length))
    }
}

extension AddressFamily {
    init?(kernel value: Int32) {
        switch value {
        case AF_INET: self = .ipv4
        case AF_INET6: self = .ipv6
        default: return nil
        }
    }
}

/// Calls `body` for every object of a libnl cache, in cache order.
func forEachObject(in cache: OpaquePointer, _ body: (OpaquePointer) -> Void) {
    var object = nl_cache_get_first(cache)
    while let current = object {
        body(current)
        object = nl_cache_get_next(current)
    }
}

/// A string a libnl getter returns, nil when it returns NULL (the attribute is absent).
func libnlString(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}
