/// How many terminal columns text takes, so that tables line up whatever the script: combining
/// marks and other zero-width characters take none, East Asian wide and fullwidth characters and
/// emoji take two (as `wcwidth` counts them), and ASCII text is measured by its length alone.
enum DisplayWidth {
    /// The columns `text` takes.
    static func of(_ text: String) -> Int {
        if isASCII(text) { return text.utf8.count }
        var columns = 0
        for scalar in text.unicodeScalars { columns += of(scalar) }
        return columns
    }

    /// Whether `text` is ASCII only (read from its contiguous UTF-8 where it has one).
    static func isASCII(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            var any: UInt8 = 0
            for byte in bytes { any |= byte }
            return any < 0x80
        } ?? text.utf8.allSatisfy { $0 < 0x80 }
    }

    /// The columns one character takes.
    static func of(_ character: Character) -> Int {
        var columns = 0
        for scalar in character.unicodeScalars { columns += of(scalar) }
        return columns
    }

    /// The columns a scalar takes.
    static func of(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 ? 0 : 1 }
        if value < 0xA0 { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if isWide(value) || scalar.properties.isEmojiPresentation { return 2 }
        return 1
    }

    /// `text` cut to at most `columns` columns, its last one "…", by whole characters.
    static func truncated(_ text: String, to columns: Int) -> (text: String, columns: Int) {
        var out = ""
        var used = 0
        for character in text {
            let width = of(character)
            if used + width > columns - 1 { break }
            out.append(character)
            used += width
        }
        return (out + "…", used + 1)
    }

    /// The East Asian Wide and Fullwidth blocks.
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            true
        default:
            false
        }
    }
}
