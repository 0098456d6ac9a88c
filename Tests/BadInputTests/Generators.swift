import PropertyBased

/// String generators shared by the bad-input suites. Each one aims at a different corner of a
/// text parser: any ASCII (controls and NUL included), any Unicode scalar, text made mostly of
/// the characters a parser cares about, and very long text.
enum Strings {
    /// Any ASCII, control characters and NUL included, up to 40 characters.
    static let ascii: Generator<String, some Sequence & SendableMetatype> = Gen<Character>.ascii.string(of: 0...40)

    /// Any Unicode scalar except surrogates, up to 24 characters.
    static let unicode: Generator<String, some Sequence & SendableMetatype> = Gen<UInt32>.value(in: 0...0x10_FFFF)
        .compactMap { Unicode.Scalar($0).map(Character.init) }
        .string(of: 0...24)

    /// Strings of characters drawn from `alphabet`, of a length in `length`.
    static func from(_ alphabet: String, length: ClosedRange<Int>) -> Generator<String, some Sequence & SendableMetatype> {
        Gen<Character?>.element(of: Array(alphabet)).map { $0! }.string(of: length)
    }

    /// One character of `alphabet` repeated 1 000 to 12 000 times, sometimes with a random ASCII
    /// prefix: lengths that no fixed-size buffer in a parser expects.
    static func long(_ alphabet: String) -> Generator<String, some Sequence & SendableMetatype> {
        zip(Gen<Character?>.element(of: Array(alphabet)).map { $0! },
            Gen.int(in: 1_000...12_000),
            Gen<Character>.ascii.string(of: 0...8))
            .map { character, count, prefix in prefix + String(repeating: character, count: count) }
    }
}

/// Inserts, deletes or replaces one character of `text` (`edit` picks which, `position` where).
func mutate(_ text: String, edit: Int, position: Int, with character: Character) -> String {
    var characters = Array(text)
    let index = characters.isEmpty ? 0 : position % characters.count
    switch edit % 3 {
    case 0: characters.insert(character, at: index)
    case 1: if !characters.isEmpty { characters.remove(at: index) }
    default: if characters.isEmpty { characters.append(character) } else { characters[index] = character }
    }
    return String(characters)
}

/// True for a non-empty message that shows as one line: no control character (C0, DEL, C1)
/// and no line or paragraph separator, so a terminal or a log reader sees exactly one line.
func isOneClearLine(_ text: String) -> Bool {
    !text.isEmpty && !text.unicodeScalars.contains { scalar in
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }
}
