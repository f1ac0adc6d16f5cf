/// A record's field names and their catalog numbers, found both ways. Lookups by name are what
/// reading and writing records do for every field, so up to ``scannedFields`` names are scanned
/// by their raw words first: a name of up to 15 bytes is stored in them, so equal short names
/// have equal words and most lookups end without comparing strings. Other names fall back to
/// string equality, which equal words always imply.
final class FieldNameTable: Sendable {
    /// Names in the order given (the catalog's), and their numbers.
    let names: [String]
    let ids: [UInt32]
    private let words: [StringWords]
    private let positionsByName: [String: Int]
    /// The position of each number's name, by number (-1 for none).
    private let positionsByID: [Int]
    /// Positions in key order (by UTF-8 bytes, as `precedesAsKey` orders): the order JSON objects print in.
    let sortedPositions: [Int]
    /// Each name as a JSON object key with its colon (`"name":`), by position.
    let jsonKeys: [String]

    /// Tables with at most this many names are scanned.
    static let scannedFields = 16

    /// `fields` in catalog order; a repeated name keeps its first number.
    init(_ fields: [(id: UInt32, name: String)]) {
        names = fields.map(\.name)
        ids = fields.map(\.id)
        words = names.map(StringWords.init)
        positionsByName = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        var byID = [Int](repeating: -1, count: Int((fields.map(\.id).max() ?? 0) + 1))
        for (position, id) in ids.enumerated() where byID[Int(id)] < 0 { byID[Int(id)] = position }
        positionsByID = byID
        let names = fields.map(\.name)
        sortedPositions = names.indices.sorted { names[$0].precedesAsKey(names[$1]) }
        jsonKeys = names.map { FieldValue.string($0).jsonText + ":" }
    }

    /// The position of the name `name`, trying `hint` first (readers ask for fields in the order
    /// a type declares them, which is mostly the catalog's).
    @inline(__always)
    func position(named name: String, hint: Int = 0) -> Int? {
        let wanted = StringWords(name)
        if hint < words.count, words[hint] == wanted { return hint }
        guard names.count <= Self.scannedFields else { return positionsByName[name] }
        for i in words.indices where words[i] == wanted { return i }
        for i in names.indices where names[i] == name { return i }
        return nil
    }

    /// The name numbered `id`, or nil.
    func name(id: UInt32) -> String? {
        guard Int(id) < positionsByID.count else { return nil }
        let position = positionsByID[Int(id)]
        return position < 0 ? nil : names[position]
    }
}

/// A string's two raw words: equal words mean equal strings (the converse holds for names of
/// up to 15 bytes stored inline, which is most field names).
struct StringWords: Equatable, Sendable {
    let low: UInt64
    let high: UInt64

    init(_ string: String) {
        (low, high) = unsafeBitCast(string, to: (UInt64, UInt64).self)
    }
}
