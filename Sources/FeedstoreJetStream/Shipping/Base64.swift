/// Standard base64 (RFC 4648, padded), written into and read from byte buffers directly: every
/// record an envelope carries exactly passes through here twice, once on the shipper and once on
/// each replica, and `Data`'s coder would add a `String` and a `Data` each way.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Each byte's value in the alphabet; 64 for a byte outside it.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 64, count: 256)
        for (value, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(value) }
        return values
    }()

    /// Appends `bytes` in base64 to `out`.
    static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        let start = out.count
        let count = (bytes.count + 2) / 3 * 4
        out.append(contentsOf: repeatElement(UInt8(ascii: "="), count: count))
        Self.alphabet.withUnsafeBufferPointer { alphabet in
            bytes.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { buffer in
                    var o = start, i = 0
                    while i + 3 <= input.count {
                        let group = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                        buffer[o] = alphabet[Int(group >> 18)]
                        buffer[o + 1] = alphabet[Int(group >> 12 & 63)]
                        buffer[o + 2] = alphabet[Int(group >> 6 & 63)]
                        buffer[o + 3] = alphabet[Int(group & 63)]
                        (i, o) = (i + 3, o + 4)
                    }
                    // One or two bytes left: their characters, then the padding already there.
                    let left = input.count - i
                    guard left > 0 else { return }
                    let group = UInt32(input[i]) << 16 | (left == 2 ? UInt32(input[i + 1]) << 8 : 0)
                    buffer[o] = alphabet[Int(group >> 18)]
                    buffer[o + 1] = alphabet[Int(group >> 12 & 63)]
                    if left == 2 { buffer[o + 2] = alphabet[Int(group >> 6 & 63)] }
                }
            }
        }
    }

    /// The bytes that `text` spells, padded to a multiple of four characters; nil for anything
    /// else.
    static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var padding = 0
        if text.count > 0, text[text.count - 1] == UInt8(ascii: "=") { padding = text[text.count - 2] == UInt8(ascii: "=") ? 2 : 1 }
        let values = Self.values
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var i = 0
        while i < text.count {
            let last = i + 4 == text.count
            var group: UInt32 = 0
            for j in 0..<4 {
                if last && j >= 4 - padding {
                    group <<= 6
                    continue
                }
                let sextet = values[Int(text[i + j])]
                guard sextet < 64 else { return nil }
                group = group << 6 | UInt32(sextet)
            }
            out.append(UInt8(truncatingIfNeeded: group >> 16))
            if !last || padding < 2 { out.append(UInt8(truncatingIfNeeded: group >> 8)) }
            if !last || padding < 1 { out.append(UInt8(truncatingIfNeeded: group)) }
            i += 4
        }
        return out
    }
}
