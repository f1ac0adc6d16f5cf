/// What every kind of change batch shares, in the contract's terms, so that one
/// ``SectionedMirror`` applies them all: ``ChangeBatch`` (typed values), ``DynamicChangeBatch``
/// (records by field name) and ``IndexBatch`` (positions only; the mirror reads the rows).
/// Other batch formats (a tool's printed batches, a bridge's messages) can conform too.
public protocol RowChangeBatch: Sendable {
    /// The value the batch carries for a row it inserts, moves or updates.
    associatedtype Value
    /// The sequences, flags and section changes.
    var header: BatchHeader { get }
    /// Every row the batch names, once.
    var rowChanges: [RowChange<Value>] { get }
}

extension RowChangeBatch {
    /// The header's ``BatchHeader/fromSequence``.
    public var fromSequence: UInt64 { header.fromSequence }
    /// The header's ``BatchHeader/toSequence``.
    public var toSequence: UInt64 { header.toSequence }
    /// The header's ``BatchHeader/isInitial``.
    public var isInitial: Bool { header.isInitial }
    /// The header's ``BatchHeader/isReset``.
    public var isReset: Bool { header.isReset }
    /// The header's ``BatchHeader/sectionDeletes``.
    public var sectionDeletes: [Int] { header.sectionDeletes }
    /// The header's ``BatchHeader/sectionInserts``.
    public var sectionInserts: [SectionInsert] { header.sectionInserts }
}

/// What a batch did to a row.
public enum RowChangeKind: Sendable, Hashable {
    case delete, insert, move, update
}

/// One row of a batch: a delete (old path), an insert (new path), a move (old and new path) or an
/// update (old and new path).
public struct RowChange<Row>: CustomStringConvertible {
    /// What happened to the row.
    public typealias Kind = RowChangeKind

    public var kind: Kind
    /// The row's path in the old snapshot (deletes, moves, updates).
    public var from: RowPath?
    /// The row's path in the new snapshot (inserts, moves, updates).
    public var to: RowPath?
    /// The row's primary key, when the batch names it.
    public var id: FieldValue?
    /// The row's new value, when the batch carries it (never for deletes).
    public var row: Row?

    /// A row change; see each property.
    public init(_ kind: Kind, from: RowPath? = nil, to: RowPath? = nil, id: FieldValue? = nil, row: Row? = nil) {
        self.kind = kind
        self.from = from
        self.to = to
        self.id = id
        self.row = row
    }

    /// The kind, paths and id.
    public var description: String {
        "\(kind) \(from.map { "\($0)" } ?? "")→\(to.map { "\($0)" } ?? "") \(id?.jsonText ?? "")"
    }
}

extension RowChange: Sendable where Row: Sendable {}

extension ChangeBatch: RowChangeBatch {
    public var rowChanges: [RowChange<E>] {
        deletes.map { RowChange(.delete, from: $0.path, id: $0.id.fieldValue) }
            + inserts.map { RowChange(.insert, to: $0.path, id: $0.id.fieldValue, row: $0.value) }
            + moves.map { RowChange(.move, from: $0.from, to: $0.to, id: $0.id.fieldValue, row: $0.value) }
            + updates.map { RowChange(.update, from: $0.from, to: $0.to, id: $0.id.fieldValue, row: $0.value) }
    }
}

extension DynamicChangeBatch: RowChangeBatch {
    public typealias Value = [String: FieldValue]

    public var rowChanges: [RowChange<[String: FieldValue]>] {
        deletes.map { RowChange(.delete, from: $0.path, id: $0.id) }
            + inserts.map { RowChange(.insert, to: $0.path, id: $0.id, row: $0.record) }
            + moves.map { RowChange(.move, from: $0.from, to: $0.to, id: $0.id, row: $0.record) }
            + updates.map { RowChange(.update, from: $0.from, to: $0.to, id: $0.id, row: $0.record) }
    }
}

extension IndexBatch: RowChangeBatch {
    /// Ranges expanded into rows; no ids and no values (read them from the watcher).
    public var rowChanges: [RowChange<Never>] {
        deletes.flatMap { range in range.rows.map { RowChange(.delete, from: RowPath(section: range.section, row: $0)) } }
            + inserts.flatMap { range in range.rows.map { RowChange(.insert, to: RowPath(section: range.section, row: $0)) } }
            + moves.map { RowChange(.move, from: $0.from, to: $0.to) }
            + updates.map { RowChange(.update, from: $0.from, to: $0.to) }
    }
}
