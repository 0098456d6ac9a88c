import CNetlink
import Glibc

/// An error from libnl, the kernel's netlink interface, or the system calls around them.
///
/// Each condition is a static member: libnl's own failures and a few that libnl cannot tell
/// apart or does not know (a receive-buffer overflow, a missing or vanished namespace). Compare
/// with them, also in `catch` patterns:
///
/// ```swift
/// do { _ = try NetlinkConnection(namespace: .named("blue")) }
/// catch NetlinkError.namespaceNotFound { print("no such namespace") }
/// ```
///
/// When the failure came from a system call, ``systemErrno`` keeps the `errno` it reported.
/// Equality compares the condition only, not the `errno` or the context.
public struct NetlinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The error code: libnl's `NLE_*` value, or one of the library's codes (1000 and up).
    package let code: Int32
    /// The `errno` behind the failure, when it came from a system call or the kernel.
    public let systemErrno: Int32?
    /// What the library was doing, such as `"open /run/netns/blue"`; empty when unknown.
    public let context: String
    /// The whole first part of ``description`` when the library words it for this one failure,
    /// such as which privilege a refused step needs; nil for the code's own message.
    let explanation: String?

    /// Creates an error from a code, an optional `errno` and a context.
    package init(code: Int32, systemErrno: Int32? = nil, context: String = "") {
        self.init(code: code, systemErrno: systemErrno, context: context, explanation: nil)
    }

    /// Creates an error whose description reads `EXPLANATION (CONTEXT: strerror(errno))`,
    /// such as `entering network namespace "blue" needs CAP_SYS_ADMIN (setns: Operation not
    /// permitted)`.
    init(code: Int32, systemErrno: Int32?, context: String, explanation: String?) {
        self.code = code
        self.systemErrno = systemErrno
        self.context = context
        self.explanation = explanation
    }

    /// Creates an error from a libnl return value (negative or positive `NLE_*` code).
    package init(libnlCode: Int32, context: String = "") {
        self.init(code: abs(libnlCode), context: context)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Matches any error that is a `NetlinkError` with the same code, for `catch` patterns.
    public static func ~= (pattern: NetlinkError, value: any Error) -> Bool {
        (value as? NetlinkError)?.code == pattern.code
    }

    public var description: String {
        if let explanation {
            var detail = context
            if let systemErrno, systemErrno != 0 {
                detail += (detail.isEmpty ? "" : ": ") + String(cString: strerror(systemErrno))
            }
            return detail.isEmpty ? explanation : "\(explanation) (\(detail))"
        }
        var text: String
        if let name = Self.libraryMessages[code] {
            text = name
        } else {
            text = String(cString: nl_geterror(code))
        }
        if let systemErrno, systemErrno != 0 {
            text += " (\(String(cString: strerror(systemErrno))))"
        }
        return context.isEmpty ? text : "\(context): \(text)"
    }

    private static let libraryMessages: [Int32: String] = [
        1000: "netlink receive buffer overflowed: the kernel dropped notifications",
        1001: "network namespace not found",
        1002: "not a network namespace",
        1003: "network namespace was deleted",
        1004: "invalid network namespace name",
        1005: "the subscription was stopped",
        1006: "invalid address",
        1007: "operation not permitted: switching network namespaces needs CAP_SYS_ADMIN",
    ]
}

extension NetlinkError {
    /// Unspecific failure. The corresponding C constant is `NLE_FAILURE`.
    public static let failure = NetlinkError(code: Int32(NLE_FAILURE))
    /// Interrupted system call. The corresponding C constant is `NLE_INTR`.
    public static let interrupted = NetlinkError(code: Int32(NLE_INTR))
    /// Bad socket. The corresponding C constant is `NLE_BAD_SOCK`.
    public static let badSocket = NetlinkError(code: Int32(NLE_BAD_SOCK))
    /// Try again. The corresponding C constant is `NLE_AGAIN`.
    public static let again = NetlinkError(code: Int32(NLE_AGAIN))
    /// Out of memory (a real allocation failure; see ``receiveBufferOverflow`` for ENOBUFS).
    /// The corresponding C constant is `NLE_NOMEM`.
    public static let noMemory = NetlinkError(code: Int32(NLE_NOMEM))
    /// Object exists. The corresponding C constant is `NLE_EXIST`.
    public static let exists = NetlinkError(code: Int32(NLE_EXIST))
    /// Invalid input data or parameter. The corresponding C constant is `NLE_INVAL`.
    public static let invalid = NetlinkError(code: Int32(NLE_INVAL))
    /// Input data out of range. The corresponding C constant is `NLE_RANGE`.
    public static let outOfRange = NetlinkError(code: Int32(NLE_RANGE))
    /// Message size not sufficient. The corresponding C constant is `NLE_MSGSIZE`.
    public static let messageSize = NetlinkError(code: Int32(NLE_MSGSIZE))
    /// Operation not supported. The corresponding C constant is `NLE_OPNOTSUPP`.
    public static let notSupported = NetlinkError(code: Int32(NLE_OPNOTSUPP))
    /// Address family not supported. The corresponding C constant is `NLE_AF_NOSUPPORT`.
    public static let addressFamilyNotSupported = NetlinkError(code: Int32(NLE_AF_NOSUPPORT))
    /// Object not found. The corresponding C constant is `NLE_OBJ_NOTFOUND`.
    public static let objectNotFound = NetlinkError(code: Int32(NLE_OBJ_NOTFOUND))
    /// Sequence number mismatch. The corresponding C constant is `NLE_SEQ_MISMATCH`.
    public static let sequenceMismatch = NetlinkError(code: Int32(NLE_SEQ_MISMATCH))
    /// The kernel reported an overrun. The corresponding C constant is `NLE_MSG_OVERFLOW`.
    public static let messageOverflow = NetlinkError(code: Int32(NLE_MSG_OVERFLOW))
    /// Message truncated. The corresponding C constant is `NLE_MSG_TRUNC`.
    public static let messageTruncated = NetlinkError(code: Int32(NLE_MSG_TRUNC))
    /// Device or resource busy. The corresponding C constant is `NLE_BUSY`.
    public static let busy = NetlinkError(code: Int32(NLE_BUSY))
    /// No access. The corresponding C constant is `NLE_NOACCESS`.
    public static let noAccess = NetlinkError(code: Int32(NLE_NOACCESS))
    /// Operation not permitted. The corresponding C constant is `NLE_PERM`.
    public static let permissionDenied = NetlinkError(code: Int32(NLE_PERM))
    /// No such device. The corresponding C constant is `NLE_NODEV`.
    public static let noDevice = NetlinkError(code: Int32(NLE_NODEV))
    /// A dump was interrupted by a change and must be retried. The corresponding C constant is
    /// `NLE_DUMP_INTR` (the kernel's `NLM_F_DUMP_INTR`).
    public static let dumpInterrupted = NetlinkError(code: Int32(NLE_DUMP_INTR))

    /// The kernel dropped notifications because the socket's receive buffer was full (`ENOBUFS`).
    /// libnl reports it as `NLE_NOMEM`; the library tells the two apart by `errno`.
    public static let receiveBufferOverflow = NetlinkError(code: 1000)
    /// The namespace file does not exist (`/run/netns/NAME` or the given path).
    public static let namespaceNotFound = NetlinkError(code: 1001)
    /// The file exists but is not a network namespace.
    public static let notANetworkNamespace = NetlinkError(code: 1002)
    /// The namespace that a subscription watched was deleted (`ip netns del`), or, for a
    /// namespace given as `/proc/PID/ns/net`, that process exited.
    public static let namespaceDeleted = NetlinkError(code: 1003)
    /// The namespace name is empty, too long, or contains `/` or NUL, or is `.` or `..`.
    public static let invalidNamespaceName = NetlinkError(code: 1004)
    /// The subscription was stopped, so no more events come.
    public static let stopped = NetlinkError(code: 1005)
    /// An address literal or prefix could not be parsed.
    public static let invalidAddress = NetlinkError(code: 1006)
    /// Entering another network namespace needs `CAP_SYS_ADMIN`, which this process lacks, or
    /// the namespace file could not be opened (permissions); the description names what is
    /// missing.
    public static let namespacePermissionDenied = NetlinkError(code: 1007)
}

/// Turns a libnl return code into a thrown ``NetlinkError``; passes non-negative values through.
@discardableResult
@inline(__always)
func nlCheck(_ result: Int32, _ context: @autoclosure () -> String = "") throws(NetlinkError) -> Int32 {
    if result < 0 { throw NetlinkError(libnlCode: result, context: context()) }
    return result
}
