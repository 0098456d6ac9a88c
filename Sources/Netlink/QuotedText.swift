extension Unicode.Scalar {
    /// Whether the scalar would break or garble a one-line message: a control character (C0,
    /// DEL, C1) or a line or paragraph separator.
    package var breaksALine: Bool {
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}

/// `text` as it is when it has no control characters or line separators, else `quoted(text)`:
/// a name in an error stays on its line, and an ordinary one is not quoted.
package func displayed(_ text: String) -> String {
    text.unicodeScalars.contains(where: \.breaksALine) ? quoted(text) : text
}

/// `text` in quotes for a one-line message: at most 80 Unicode scalars (a single character can
/// hold thousands), control characters and line separators written as `\u{...}`.
func quoted(_ text: String) -> String {
    let scalars = text.unicodeScalars
    let shown = scalars.prefix(80).map { scalar in
        scalar.breaksALine ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
    }.joined()
    return "\"" + shown + (scalars.count > 80 ? "…" : "") + "\""
}
