/// One inconsistency found by ``Store/verify(progress:)``.
public struct VerificationIssue: Sendable, Hashable, CustomStringConvertible {
    /// What was checked: `records:Message`, `index:Message.byFolderDate`, `journal`, `requests`
    /// (the write requests a primary remembers).
    public var location: String
    /// What is wrong.
    public var problem: String

    /// An issue at `location`.
    public init(location: String, problem: String) {
        self.location = location
        self.problem = problem
    }

    /// `location: problem`.
    public var description: String { "\(location): \(problem)" }
}

extension Store {
    /// Checks every invariant of the store against a full scan: LMDB's page structure is sound
    /// (checked first: the other checks run only on a sound structure); every record decodes and
    /// holds the fields its entity's type declares, in their kinds (``CatalogEntity/declaredKinds``;
    /// records an unfinished migration has not reached yet are exempt; where the catalog holds
    /// no declared kinds, ``entitiesWithUncheckedTypes``, no field may hold values of several
    /// kinds, nor a field the type does not declare); every
    /// index holds exactly the entries its records and condition call for, in order, with unique
    /// indexes unique; every index's counts agree with its entries at every position; the
    /// journal's commits are contiguous and complete. Returns every issue
    /// found (empty when consistent).
    /// - Parameter progress: called now and then with what is being checked (a database name),
    ///   how many of its items are done, and how many there are.
    /// - Complexity: O(i · n log n) time for n records and i indexes, in constant memory.
    public func verify(progress: ((_ stage: String, _ done: Int, _ total: Int) -> Void)? = nil) throws -> [VerificationIssue] {
        for _ in 0..<100 {
            let issues: [VerificationIssue]? = try read { tx in
                // LMDB trusts its file: damaged page structure would crash the scans below, so
                // it is checked first, without LMDB, and the scans run only on a sound structure.
                let pages = try tx.access { txn in
                    try LMDBPageCheck.check(core.environment, in: txn) { progress?("data.mdb", $0, $1) }
                }
                guard let pages else { return nil }  // commits replaced this snapshot's meta page
                if !pages.isEmpty { return pages.map { VerificationIssue(location: "data.mdb", problem: $0) } }
                return try StoreVerifier(tx: tx, progress: progress).run()
            }
            if let issues { return issues }
        }
        throw LMDBPageCheck.busy(core.environment)
    }

    /// The entities whose records ``verify(progress:)`` cannot hold to the kinds their type
    /// reads: the catalog holds no declared kinds for them (the store was last opened without
    /// the application's types, or by a version that did not record them). Verify still finds
    /// fields of such an entity that hold several kinds, and fields its type does not declare.
    /// Opening the store once with the application's types records the kinds.
    public var entitiesWithUncheckedTypes: [String] {
        get throws { try catalog.sortedEntities.filter { $0.declaredKinds == nil }.map(\.name) }
    }
}

/// The full-scan invariant checker behind ``Store/verify(progress:)``.
struct StoreVerifier {
    let tx: ReadTransaction
    var progress: ((String, Int, Int) -> Void)?
    private let maximumPerCheck = 20
    /// Items between progress reports.
    private let progressStep = 8_192

    init(tx: ReadTransaction, progress: ((String, Int, Int) -> Void)? = nil) {
        self.tx = tx
        self.progress = progress
    }

    private func reportProgress(_ stage: String, _ done: Int, _ total: Int) {
        if done % progressStep == 0 || done == total { progress?(stage, done, total) }
    }

    func run() throws -> [VerificationIssue] {
        var issues: [VerificationIssue] = []
        for entity in tx.schema.catalog.sortedEntities {
            issues += try verify(entity: entity.name)
        }
        issues += try verifyJournal()
        issues += try tx.appliedRequestProblems().prefix(maximumPerCheck).map { VerificationIssue(location: "requests", problem: $0) }
        return issues
    }

    /// One walk of the records checks that each decodes and that its type can read it, and
    /// counts the records each index should hold; each index is then walked in order, and each
    /// entry must be the key its record calls for. Memory stays flat whatever the store's size:
    /// nothing is gathered, and the pages walked are released as `dump` releases them.
    private func verify(entity name: String) throws -> [VerificationIssue] {
        var entity = try tx.schema.entity(name)
        var issues: [VerificationIssue] = []
        let recordCount = try tx.count(entity: name)
        var refused = 0
        var members = [Int](repeating: 0, count: entity.indexes.count)
        let unmigrated = try tx.unmigratedRecordsStart(of: name)
        var scanned = 0
        // An entity whose type's field names are known but not their kinds: its records are
        // held to one kind per field, and to the fields the type declares. (With declared kinds,
        // the shape check holds the kinds; fields kept on purpose, `keepingUndeclaredFields`,
        // and a replica's copies of them, are then part of the record.)
        var tally = entity.catalog.declaredKinds == nil ? entity.catalog.declaredFields.map { FieldKindTally(declared: DeclaredFields(stored: $0)) } : nil
        try tx.scan(entity: name, index: nil, range: .all, reverse: false, offset: 0, limit: nil) { key, value in
            scanned += 1
            reportProgress(entity.catalog.recordsDatabaseName, scanned, recordCount)
            if scanned % pagesReleasedEvery == 0 { releasePages() }
            let primaryKey = Array(key)
            let fields: [String: FieldValue]
            do {
                fields = try tx.decodeFields(value, of: &entity, id: nil)
            } catch {
                issues.append(VerificationIssue(location: entity.catalog.recordsDatabaseName, problem: "\(error)"))
                return
            }
            // Records an unfinished migration has not reached yet keep their old shape.
            let migrated = unmigrated.map { primaryKey.lexicographicallyPrecedes($0) || primaryKey == $0 } ?? true
            if migrated, let problem = entity.shape?.problem(in: fields) {
                refused += 1
                if refused <= maximumPerCheck {
                    let id = (try? KeyDecoder.decode(primaryKey).first?.value) ?? .null
                    issues.append(VerificationIssue(location: entity.catalog.recordsDatabaseName,
                                                    problem: "\(name) \(id.jsonText): \(problem.reason.describing(field: problem.field)), "
                                                        + "so the entity's type cannot read it"))
                }
            }
            if migrated, tally != nil { tally!.add(fields, primaryKey: primaryKey) }
            for (i, index) in entity.indexes.enumerated() {
                members[i] += (try? index.keys(of: fields, primaryKey: primaryKey).count) ?? 0
            }
        }
        if let tally {
            issues += tally.problems(entity: name).prefix(maximumPerCheck).map {
                VerificationIssue(location: entity.catalog.recordsDatabaseName, problem: $0)
            }
        }
        if refused > maximumPerCheck {
            issues.append(VerificationIssue(location: entity.catalog.recordsDatabaseName,
                                            problem: "\(refused - maximumPerCheck) more records its type cannot read"))
        }
        for (i, index) in entity.indexes.enumerated() {
            issues += try compare(index, members: members[i], of: &entity)
        }
        return issues
    }

    /// Items walked between releases of the pages read.
    private let pagesReleasedEvery = 256

    /// Lets go of the pages of the map read so far (they stay in the page cache): a walk of a
    /// large store keeps its resident memory flat. The transaction holds the map in place.
    private func releasePages() { tx.core.environment.releaseResidentPages() }

    /// Walks the index in order: each entry must name a record whose key in the index is that
    /// entry among its keys (else it is an entry without a matching record), unique keys may not
    /// repeat, and the index's counts must agree with its entries. Entries are then as many as
    /// the keys records call for (`members`) exactly when none is missing, since each valid
    /// entry is one of its record's keys; when some are, a walk of the records names them.
    /// - Complexity: O(n log n) for n entries, in constant memory.
    private func compare(_ index: IndexSchema, members: Int, of entity: inout EntitySchema) throws -> [VerificationIssue] {
        let location = index.catalog.databaseName
        var extra: [VerificationIssue] = [], duplicates: [VerificationIssue] = []
        let componentCount = index.definition.components.count
        var previous: [FieldValue]?
        var valid = 0
        let records = entity.records
        try tx.access { txn in
            let total = try txn.statistics(index.database).entries
            var seen = 0
            try txn.withCursor(index.database) { cursor in
                var more = try cursor.first()
                while more {
                    let entryKey = cursor.key
                    var matches = false
                    if let start = try? KeyDecoder.lengthOfComponents(componentCount, in: entryKey),
                       let record = try txn.borrowedValue(records, key: UnsafeRawBufferPointer(rebasing: entryKey[start...])),
                       let values = try? tx.decodeValues(record, of: &entity, id: nil),
                       let wanted = try? index.keys(of: values, primaryKey: Array(entryKey[start...]))
                    {
                        matches = wanted.contains { $0.withUnsafeBytes { $0.compare(with: entryKey) } == 0 }
                    }
                    if matches {
                        valid += 1
                    } else if extra.count < maximumPerCheck {
                        extra.append(VerificationIssue(location: location, problem: "entry without a matching record \(describe(Array(entryKey)))"))
                    }
                    if index.definition.unique, let components = try? KeyDecoder.decode(Array(entryKey)).map(\.value) {
                        let values = Array(components.prefix(componentCount))
                        if let unique = index.uniqueKey(values), unique == previous, duplicates.count < maximumPerCheck {
                            duplicates.append(VerificationIssue(location: location, problem: "unique key \(FieldValue.array(unique).jsonText) held twice"))
                        }
                        previous = values
                    }
                    seen += 1
                    reportProgress(location, seen, total)
                    if seen % pagesReleasedEvery == 0 { releasePages() }
                    more = try cursor.next()
                }
            }
        }
        let missing = valid < members ? try missingEntries(of: index, in: &entity) : []
        let countProblems = try tx.accessCounts(of: index) { try $0.check(in: $1, periodically: releasePages) }
        let found = missing + extra + countProblems.map { VerificationIssue(location: index.catalog.countsDatabaseName, problem: $0) } + duplicates
        return Array(found.prefix(maximumPerCheck))
    }

    /// The keys records call for in `index` that it does not hold (the first few).
    private func missingEntries(of index: IndexSchema, in entity: inout EntitySchema) throws -> [VerificationIssue] {
        var missing: [VerificationIssue] = []
        var scanned = 0
        try tx.scan(entity: entity.name, index: nil, range: .all, reverse: false, offset: 0, limit: nil) { key, value in
            scanned += 1
            if scanned % pagesReleasedEvery == 0 { releasePages() }
            guard missing.count < maximumPerCheck, let values = try? tx.decodeValues(value, of: &entity, id: nil),
                  let wanted = try? index.keys(of: values, primaryKey: Array(key)) else { return }
            for key in wanted where missing.count < maximumPerCheck {
                if try tx.access({ try $0.get(index.database, key: key) }) == nil {
                    missing.append(VerificationIssue(location: index.catalog.databaseName, problem: "missing entry \(describe(key))"))
                }
            }
        }
        return missing
    }

    private func verifyJournal() throws -> [VerificationIssue] {
        var issues: [VerificationIssue] = []
        let bounds = try tx.journalBounds()
        func report(_ problem: String) { if issues.count < maximumPerCheck { issues.append(VerificationIssue(location: "journal", problem: problem)) } }
        // Headers in key order (each after its commit's entries), and the entries seen per commit,
        // from the first retained commit on (trimmed commits' keys may wait there to be removed).
        var sequences: [UInt64] = []
        var entries: (sequence: UInt64, count: Int)?
        var walked = 0
        try tx.access { txn in
            try txn.withCursor(tx.core.system.journal) { cursor in
                var more = try cursor.seek(atOrAfter: JournalKeys.sequenceKey(bounds.first))
                while more {
                    let sequence = try JournalKeys.sequence(from: cursor.key)
                    if let open = entries, open.sequence != sequence {
                        report("commit \(open.sequence) has \(open.count) entries but no header")
                        entries = nil
                    }
                    if try JournalKeys.isHeader(cursor.key) {
                        sequences.append(sequence)
                        do {
                            let said = try JournalKeys.decodeCommitHeader(cursor.value).entries
                            if said != entries?.count ?? 0 {
                                report("commit \(sequence) has \(entries?.count ?? 0) entries; its header says \(said)")
                            }
                        } catch { report("header of commit \(sequence): \(error)") }
                        entries = nil
                    } else {
                        entries = (sequence, (entries?.count ?? 0) + 1)
                        walked += 1
                        if walked % pagesReleasedEvery == 0 { releasePages() }
                        do { _ = try JournalRecord.decode(cursor.value) } catch { report("entry of commit \(sequence): \(error)") }
                    }
                    more = try cursor.next()
                }
            }
        }
        if let open = entries { report("commit \(open.sequence) has \(open.count) entries but no header") }
        // The newest sequence is read from the journal's last key, so only the first can disagree.
        if let first = sequences.first, first != bounds.first {
            report("first commit is \(first); the retained range starts at \(bounds.first)")
        }
        for (a, b) in zip(sequences, sequences.dropFirst()) where b != a + 1 {
            report("sequence gap between \(a) and \(b)")
        }
        return issues
    }

    private func describe(_ key: [UInt8]) -> String {
        (try? FieldValue.array(KeyDecoder.decode(key).map(\.value)).jsonText) ?? key.map { String($0, radix: 16) }.joined()
    }
}
