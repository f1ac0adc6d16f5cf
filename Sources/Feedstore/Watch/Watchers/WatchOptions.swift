/// How a watcher presents its query. What its batches carry (values, records or positions) is
/// chosen by the call that opens it: `watch` or `watchIndexes`.
public struct WatchOptions: Sendable, Hashable {
    /// Sections are the runs of rows that share their first `sectionBy` index components
    /// (0: one section holding every row).
    public var sectionBy: Int
    /// When set, only updates that change one of these fields are delivered (moves, inserts and
    /// deletes always are): a list that shows titles need not redraw when a read flag flips.
    public var fields: Set<String>?
    /// When set, the watcher shows only these positions of the full order (then sectioned):
    /// rows pushed in or out by changes elsewhere are inserts and deletes.
    public var window: WatchWindow?
    /// Entities the rows display through a foreign key: a change to one of their records is an
    /// update of exactly the rows that refer to it.
    public var related: [RelatedRecords]

    /// What options named by key path leave to the watcher's opening, boxed so that options
    /// given by name (and every idle watcher holding them) pay one word for it.
    var keyPaths: KeyPathOptions?

    /// Options for a watcher; see each property.
    public init(sectionBy: Int = 0, fields: Set<String>? = nil, window: WatchWindow? = nil, related: [RelatedRecords] = []) {
        self.sectionBy = sectionBy
        self.fields = fields
        self.window = window
        self.related = related
    }

    /// Options naming fields by key path: sections are the runs of rows that share the index's
    /// components up to and including the one `sectionBy` reads (`\Message.folder` on
    /// `byFolderDate`: a section per folder); `fields` are the fields a row shows.
    ///
    /// A key path that reads no stored field, or a `sectionBy` that is not one of the query's
    /// index components, is reported by the watcher's first batch, as an unknown name is.
    public init<E: Entity>(sectionBy: PartialKeyPath<E>? = nil, fields: [PartialKeyPath<E>]? = nil, window: WatchWindow? = nil,
                           related: [RelatedRecords] = [])
    {
        self.init(window: window, related: related)
        var sectionField: String?
        var problem: KeyPathFields.Problem?
        if let sectionBy {
            switch KeyPathFields.field(of: sectionBy) {
            case let .success(field): sectionField = field
            case let .failure(failure): problem = failure
            }
        }
        if let fields {
            var names = Set<String>()
            for keyPath in fields {
                switch KeyPathFields.field(of: keyPath) {
                case let .success(field): names.insert(field)
                case let .failure(failure): problem = problem ?? failure
                }
            }
            self.fields = names
        }
        if sectionField != nil || problem != nil { keyPaths = KeyPathOptions(sectionField: sectionField, problem: problem) }
    }

    /// The options with fields named by key path turned into names and counts, for a watcher
    /// on `index` of `entity`.
    func resolved(entity: String, index: IndexDefinition) throws -> WatchOptions {
        guard let keyPaths else { return self }
        if let problem = keyPaths.problem { throw problem.error(entity: entity, usedBy: "the watch options") }
        var resolved = self
        resolved.keyPaths = nil
        guard let sectionField = keyPaths.sectionField else { return resolved }
        guard let position = index.components.firstIndex(where: { $0.field == sectionField }) else {
            let components = index.components.map(\.field)
            throw FeedstoreError.invalidRange(
                entity: entity, index: index.name,
                reason: "sectionBy reads \(sectionField), which is not a component of the index "
                    + (components.isEmpty ? "(it has none)" : "(its components are \(components.joined(separator: ", ")))")
                    + "; sections group rows by the index's leading components, so section by one of them, "
                    + "or watch an index whose components start with \(sectionField)")
        }
        resolved.sectionBy = position + 1
        return resolved
    }
}

/// A field named by key path for sectioning, turned into ``WatchOptions/sectionBy`` when the
/// watcher opens against its query's index, and the first key path that reads no stored field.
final class KeyPathOptions: Sendable, Hashable {
    let sectionField: String?
    let problem: KeyPathFields.Problem?

    init(sectionField: String?, problem: KeyPathFields.Problem?) {
        self.sectionField = sectionField
        self.problem = problem
    }

    static func == (a: KeyPathOptions, b: KeyPathOptions) -> Bool { a.sectionField == b.sectionField && a.problem == b.problem }

    func hash(into hasher: inout Hasher) {
        hasher.combine(sectionField)
        hasher.combine(problem)
    }
}

/// A related entity shown by a watcher's rows: `RelatedRecords(Contact.self, through: "byContact")`
/// for messages that show their contact, where `byContact` is the watched entity's index whose
/// first component is the foreign key (`contactId`).
public struct RelatedRecords: Sendable, Hashable {
    /// The related entity's name.
    public var entity: String
    /// The watched entity's index on the foreign key.
    public var foreignKeyIndex: String

    /// Rows refer to records of `type` through the foreign key leading `index`.
    public init<R: Entity>(_ type: R.Type, through index: String) {
        entity = R.entityName
        foreignKeyIndex = index
    }

    /// Rows refer to records of `type` through the foreign key leading `index`:
    /// `RelatedRecords(Contact.self, through: Message.byContact)`.
    public init<R: Entity, Root: Entity, each K>(_ type: R.Type, through index: EntityIndex<Root, repeat each K>) {
        self.init(type, through: index.name)
    }
}

/// A page of a query's full order: `limit` rows from position `offset`.
public struct WatchWindow: Sendable, Hashable {
    /// The first position shown.
    public var offset: Int
    /// How many positions are shown.
    public var limit: Int

    /// The rows at positions `offset..<offset + limit`.
    public init(offset: Int, limit: Int) {
        self.offset = max(0, offset)
        self.limit = max(0, limit)
    }
}
