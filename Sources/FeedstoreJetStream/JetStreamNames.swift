/// The names of streams and buckets, checked before they reach the server or a file name. A
/// stream's name goes into API subjects (`$JS.API.STREAM.INFO.<name>`), the write requests'
/// subject and a lock file's name: a space there splits the protocol line and the server answers
/// nothing, a dot makes another subject, a slash another directory.
enum JetStreamNames {
    /// Throws ``JetStreamError/invalidName(kind:name:reason:)`` unless JetStream takes `name` as
    /// a stream's name: not empty, and no whitespace, control character, `.`, `*`, `>`, `/` or `\`.
    static func checkStream(_ name: String) throws {
        if name.isEmpty { throw JetStreamError.invalidName(kind: "stream", name: name, reason: "it is empty") }
        if let bad = name.unicodeScalars.first(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F || ".*>/\\".unicodeScalars.contains($0) }) {
            throw JetStreamError.invalidName(kind: "stream", name: name, reason: "it holds \(describe(bad)); a stream's name may not hold whitespace, control characters, \".\", \"*\", \">\", \"/\" or \"\\\"")
        }
    }

    /// Throws ``JetStreamError/invalidName(kind:name:reason:)`` unless an Object Store takes
    /// `name` as a bucket's name: letters A–Z and a–z, digits, `-` and `_` only.
    static func checkBucket(_ name: String) throws {
        if name.isEmpty { throw JetStreamError.invalidName(kind: "bucket", name: name, reason: "it is empty") }
        if let bad = name.unicodeScalars.first(where: { !($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_")) }) {
            throw JetStreamError.invalidName(kind: "bucket", name: name, reason: "it holds \(describe(bad)); a bucket's name may hold only letters A–Z and a–z, digits, \"-\" and \"_\"")
        }
    }

    private static func describe(_ scalar: Unicode.Scalar) -> String {
        scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F
            ? "U+" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4) : "\"\(scalar)\""
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
