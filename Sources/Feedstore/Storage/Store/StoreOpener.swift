import Foundation

/// Opening a store: checking the directory, opening LMDB, checking the format, and registering
/// the application's entities (creating, rebuilding and dropping indexes).
enum StoreOpener {
    /// Named databases an environment may hold: system ones, one per entity, one per index.
    static let maximumDatabases: UInt32 = 126

    /// A store directory checked for opening: its canonical path, and what opening it is about
    /// to make, so that an open that fails leaves nothing behind.
    struct PreparedDirectory {
        var path: String
        /// The directories this open made, outermost first.
        var madeDirectories: [String] = []
        /// Whether the directory held no store (no data.mdb).
        var isNew: Bool

        /// Removes what the failed open made: the store's files when it was new, and the
        /// directories it made. Left alone when another process has the new store open.
        func undo() {
            guard isNew else { return }
            let fm = FileManager.default
            do {
                try LMDBLockFile.withNoOtherProcess(directory: path) { () throws(LMDBError) in
                    for file in ["data.mdb", CommitLog.fileName, CommitSignal.fileName] { try? fm.removeItem(atPath: path + "/" + file) }
                }
            } catch {
                return
            }
            for file in ["lock.mdb"] + LMDBEnvironment.gateFileNames { try? fm.removeItem(atPath: path + "/" + file) }
            for directory in madeDirectories.reversed() { rmdir(directory) }
        }
    }

    /// Checks that `path` is a store directory (or a place to create one), making it when it is
    /// missing.
    static func prepareDirectory(_ path: String, options: StoreOptions) throws -> PreparedDirectory {
        let fm = FileManager.default
        var made: [String] = []
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw FeedstoreError.notAStore(path: path, reason: "it is a file; a store is a directory")
            }
            guard access(path, X_OK) == 0 else {
                throw FeedstoreError.accessDenied(path: path, reason: "the directory is not accessible to this user")
            }
            if !fm.fileExists(atPath: path + "/data.mdb") {
                if options.opensReadOnly { throw FeedstoreError.notAStore(path: path, reason: "the directory holds no data.mdb") }
                let contents = (try? fm.contentsOfDirectory(atPath: path)) ?? []
                if !contents.isEmpty {
                    throw FeedstoreError.notAStore(path: path, reason: "the directory is not empty and holds no data.mdb")
                }
            }
        } else {
            if options.opensReadOnly { throw FeedstoreError.notAStore(path: path, reason: "it does not exist") }
            // Directory permissions follow the file mode, plus search permission where readable.
            let mode = options.fileMode | ((options.fileMode & 0o444) >> 2)
            // The directories about to be made, outermost first.
            var missing = URL(fileURLWithPath: path).standardizedFileURL.path
            while !missing.isEmpty, missing != "/", !fm.fileExists(atPath: missing) {
                made.insert(missing, at: 0)
                missing = (missing as NSString).deletingLastPathComponent
            }
            do {
                try fm.createDirectory(atPath: path, withIntermediateDirectories: true,
                                       attributes: [.posixPermissions: NSNumber(value: mode)])
            } catch {
                throw FeedstoreError.notAStore(path: path, reason: "cannot create the directory: \(error.localizedDescription)")
            }
            // Their names survive a power loss before the store's first commit is acknowledged.
            try DirectorySync.syncParents(of: made)
        }
        return PreparedDirectory(path: URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path,
                                 madeDirectories: made, isNew: !fm.fileExists(atPath: path + "/data.mdb"))
    }

    /// Opens the environment, checks or initializes the store's metadata, and resolves the schema.
    static func openCore(path: String, options: StoreOptions) throws -> StoreCore {
        var flags: LMDBEnvironment.Flags = options.immutable ? [.readOnly, .noLock] : options.readOnly ? [.readOnly] : []
        var readOnlyReason = options.readOnlyReason
        switch options.durability {
        case .full: break
        case .relaxed: flags.insert(options.syncsAfterPublishing ? .noSync : .noMetaSync)
        case .none: flags.insert(.noSync)
        }
        if options.writesThroughMap { flags.insert(.writeMap) }
        var isNew = !FileManager.default.fileExists(atPath: path + "/data.mdb")
        if !isNew, !options.immutable, LMDBMetaPages.holdsNoCommit(directory: path) {
            // Made when the machine went down, before its first commit: made again.
            guard !options.readOnly else {
                throw FeedstoreError.notAStore(path: path, reason: "its data file was being made when the machine went down and holds "
                    + "no commit; opening it for writing makes the store anew")
            }
            try startOver(dataFile: path + "/data.mdb")
            isNew = true
        }
        // A commit log: LMDB commits unsynced, and commits after the last checkpoint that may not
        // be whole in its file are made again from the log.
        // A writer that keeps no log recovers from one left behind, then retires it: a log whose
        // checkpoint is older than commits made without it must never be replayed.
        let writes = !options.readOnly && !options.immutable
        if !writes && !options.immutable, try CommitLogKeeper.needsRecovery(path: path) {
            try recoverForReading(path: path, options: options)
        }
        let keepsLog = writes && options.keepsCommitLog && options.durability == .full
        let leftLog = writes && !keepsLog && FileManager.default.fileExists(atPath: path + "/" + CommitLog.fileName)
        var commitLog = keepsLog || leftLog ? try CommitLog(directory: path, mode: options.fileMode) : nil
        if let log = commitLog, !log.lockForWriting() {
            // Another process writes the store through its log: this one may only read.
            commitLog = nil
            flags.insert(.readOnly)
            readOnlyReason = readOnlyReason ?? "another process writes it, keeping its commit log"
        }
        let recovery = try commitLog.map { try CommitLogKeeper.recovery(path: path, log: $0) }
        let replayed = recovery?.records ?? []
        if keepsLog && commitLog != nil { flags.insert(.noSync) }
        // Replayed commits reuse none of the checkpoint's pages (it is pinned), and the map cannot
        // grow under the pin: room for them all is made at open.
        var mapSize = options.initialMapSize
        if !replayed.isEmpty {
            let file = (try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? NSNumber)?.intValue ?? 0
            mapSize = max(mapSize, file + 8 * replayed.reduce(0) { $0 + $1.payload.count } + (64 << 20))
        }
        func openEnvironment() throws(LMDBError) -> LMDBEnvironment {
            try LMDBEnvironment(path: path, flags: flags, mapSize: mapSize,
                                maxDatabases: maximumDatabases, maxReaders: StoreCore.maximumReaders, mode: options.fileMode)
        }
        let environment: LMDBEnvironment
        do {
            do {
                environment = try openEnvironment()
            } catch let error where readOnlyReason == nil && !isNew && (error.code == EACCES || error.code == EROFS) {
                // A user who may not write the data file, or a read-only file system, can still read.
                flags.insert(.readOnly)
                readOnlyReason = writeRefusal(error.code)
                environment = try openEnvironment()
            }
        } catch let error {
            if error.isForeignOrCorruptFile { throw FeedstoreError.notAStore(path: path, reason: error.description) }
            if error.code == EACCES { throw FeedstoreError.accessDenied(path: path, reason: accessProblem(path)) }
            if error.code == EROFS { throw FeedstoreError.readOnly(path: path, reason: writeRefusal(EROFS)) }
            throw FeedstoreError.lmdb(error, path: path)
        }
        if isNew, let lockMode = options.lockFileMode { chmod(path + "/lock.mdb", lockMode) }
        if isNew && !flags.contains(.readOnly) {
            // LMDB made data.mdb: its name must survive a power loss with the first commit, and
            // LMDB syncs only the file.
            do { try DirectorySync.sync(path) } catch {
                environment.close()
                throw error
            }
        }
        // The checkpoint's snapshot stays pinned from here until the next checkpoint (or the
        // log's retirement): a crash before it must find the checkpoint's pages whole, and the
        // replayed commits and whatever the opening writes would otherwise reuse them.
        var checkpointPin: LMDBTransaction? = nil
        do {
            if commitLog != nil { checkpointPin = try LMDBTransaction(environment: environment, readOnly: true) }
            // The checkpoint's pages are read while its commits are made again: the file must
            // hold them (LMDB would fault on a page past its end).
            if !replayed.isEmpty { try checkNotTruncated(environment, path: path) }
            try CommitLogKeeper.replay(replayed, in: environment)
            // (Not while another process has the store open: it may be the one keeping the log.)
            if leftLog, let commitLog, recovery?.alone == true {
                try environment.sync(force: true)
                try commitLog.retire()
            }
            try checkNotTruncated(environment, path: path)
            // Opening reads the main database and the metadata: their pages are always checked
            // first (a few pages); every page only when asked.
            let problems = try LMDBPageCheck.check(environment, begin: { try LMDBTransaction(environment: environment, readOnly: true) },
                                                   only: options.verifyPagesOnOpen ? nil : [SystemDatabases.metaName])
            if !problems.isEmpty { throw FeedstoreError.damagedFile(path: path, problems: problems) }
            // Reader slots of processes that died are cleared so they do not pin old pages.
            if !options.immutable { try environment.clearStaleReaders() }
            let system = try openSystemDatabases(environment: environment, path: path, readOnly: readOnlyReason != nil)
            // Its commit, if it wrote anything, is synced like any other.
            if options.syncsAfterPublishing && readOnlyReason == nil { try environment.sync(force: true) }
            let placeholder = SchemaSnapshot(catalog: Catalog(), entities: [:])
            let signal = try CommitSignal(directory: path, writable: readOnlyReason == nil && !options.immutable)
            let core = StoreCore(path: path, environment: environment, readOnlyReason: readOnlyReason, options: options,
                                 system: system, schema: placeholder, commitSignal: signal)
            try core.refreshSchema()
            if keepsLog, let commitLog, readOnlyReason == nil {
                core.commitLog = try CommitLogKeeper(log: commitLog, environment: environment, path: path,
                                                     checkpointPages: options.commitLogCheckpointPages)
            }
            checkpointPin.take()?.abort()
            return core
        } catch {
            checkpointPin.take()?.abort()
            environment.close()
            if let lmdb = error as? LMDBError {
                if lmdb.isForeignOrCorruptFile { throw FeedstoreError.notAStore(path: path, reason: lmdb.description) }
                throw FeedstoreError.lmdb(lmdb, path: path)
            }
            throw error
        }
    }

    /// Makes a commit log's recovery for a handle that reads only, as a writer would on open, when
    /// this user may write the store (SQLite's readers likewise roll back a journal left by a
    /// crash); otherwise refuses to read commits that may be damaged.
    private static func recoverForReading(path: String, options: StoreOptions) throws {
        guard access(path + "/data.mdb", W_OK) == 0, access(path + "/" + CommitLog.fileName, W_OK) == 0 else {
            throw FeedstoreError.needsRecovery(path: path, reason: "the machine went down while a process wrote it through its "
                + "commit log, and this user may not write it to make the log's commits again; open it once as a user who may")
        }
        var writer = options
        writer.readOnly = false
        writer.durability = .full
        writer.keepsCommitLog = true
        // (A writer that took the log meanwhile recovered it on its own open: this one then reads.)
        try openCore(path: path, options: writer).close()
    }

    /// Empties a data file that holds no commit (``LMDBMetaPages/holdsNoCommit(directory:)``), so
    /// that LMDB makes it anew.
    private static func startOver(dataFile: String) throws {
        guard truncate(dataFile, 0) == 0 else {
            throw FeedstoreError.notAStore(path: (dataFile as NSString).deletingLastPathComponent,
                                           reason: "its data file holds no commit and cannot be emptied: \(String(cString: strerror(errno)))")
        }
    }

    /// Why the system refused to write, for ``FeedstoreError/readOnly(path:reason:)``.
    static func writeRefusal(_ code: Int32) -> String {
        code == EROFS ? "its file system is read-only" : "data.mdb is not writable by this user"
    }

    /// Which file keeps this user out, and what would let them in.
    static func accessProblem(_ path: String) -> String {
        let data = path + "/data.mdb", lock = path + "/lock.mdb"
        if access(path, X_OK) != 0 { return "the directory is not accessible to this user" }
        if access(data, F_OK) != 0 { return "this user may not create the store's files in the directory" }
        if access(data, R_OK) != 0 { return "data.mdb is not readable by this user" }
        if access(lock, F_OK) != 0 { return "lock.mdb is missing and this user may not create it in the directory" }
        if access(lock, R_OK | W_OK) != 0 {
            return "lock.mdb is not writable by this user, and every reader records its snapshot there; "
                + "give readers write access to it (StoreOptions.lockFileMode), or open the store immutable "
                + "(StoreOptions.immutable, storectl --immutable) when no process writes it"
        }
        return "permission denied"
    }

    /// LMDB maps the file: reading a page past the end of a truncated file would kill the
    /// process (SIGBUS). Refuse a file that ends before a page in use; pages that only the free
    /// list names may lie past the end, unwritten (``LMDBPageCheck/FileEnd``).
    private static func checkNotTruncated(_ environment: LMDBEnvironment, path: String) throws {
        for _ in 0..<100 {
            switch try LMDBPageCheck.fileEnd(environment, in: try LMDBTransaction(environment: environment, readOnly: true)) {
            case nil: continue
            case .whole, .unwrittenFreePages: return
            case .truncated(let reason): throw FeedstoreError.notAStore(path: path, reason: reason)
            }
        }
        throw LMDBPageCheck.busy(environment)
    }

    private static func openSystemDatabases(environment: LMDBEnvironment, path: String, readOnly: Bool) throws -> SystemDatabases {
        let txn = try LMDBTransaction(environment: environment, readOnly: readOnly)
        var meta = try txn.openDatabase(named: SystemDatabases.metaName, create: false)
        if meta == nil {
            guard !readOnly else { throw FeedstoreError.notAStore(path: path, reason: "LMDB environment without Feedstore metadata") }
            // Only an empty environment may become a store; anything else is someone else's data.
            guard let main = try txn.openDatabase(named: "", create: false), try txn.statistics(main).entries == 0 else {
                throw FeedstoreError.notAStore(path: path, reason: "LMDB environment without Feedstore metadata")
            }
            let created = try txn.openDatabase(named: SystemDatabases.metaName, create: true)!
            try txn.put(created, key: MetaKey.format, value: withUnsafeBytes(of: Catalog.currentFormatVersion.bigEndian) { Array($0) })
            try txn.put(created, key: MetaKey.catalog, value: Catalog().encoded())
            try txn.put(created, key: MetaKey.catalogVersion, value: MetaKey.encode(0))
            // The journal starts at sequence 1; trimming moves this forward.
            try txn.put(created, key: MetaKey.firstRetained, value: MetaKey.encode(1))
            try txn.put(created, key: MetaKey.storeIdentifier, value: newStoreIdentifier())
            meta = created
        }
        guard let format = try txn.get(meta!, key: MetaKey.format), format.count == 4 else {
            throw FeedstoreError.notAStore(path: path, reason: "the format version is missing")
        }
        let version = format.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if version > Catalog.currentFormatVersion {
            throw FeedstoreError.formatVersionTooNew(path: path, found: version, supported: Catalog.currentFormatVersion)
        }
        var opened: [LMDBDatabase] = []
        for name in [SystemDatabases.journalName, SystemDatabases.cursorsName] {
            guard let db = try txn.openDatabase(named: name, create: !readOnly) else {
                throw FeedstoreError.notAStore(path: path, reason: "database \(name) is missing")
            }
            opened.append(db)
        }
        let system = SystemDatabases(meta: meta!, journal: opened[0], cursors: opened[1])
        if version < 2 {
            guard !readOnly else {
                throw FeedstoreError.formatUpgradeNeeded(path: path, found: version, current: Catalog.currentFormatVersion)
            }
            try upgradeFromFormatOne(system, in: txn, path: path)
        }
        // Formats 3 and 4 read format 2 as it is; a handle that can write adds what format 3 has
        // (format 4 adds nothing to stores without text indexes).
        if version < Catalog.currentFormatVersion && !readOnly { try upgradeToFormatThree(system, in: txn) }
        try txn.commit()
        return system
    }

    static func newStoreIdentifier() -> [UInt8] { withUnsafeBytes(of: UUID().uuid) { Array($0) } }

    /// Format 2 or 3 → the current one: the store gets its identifier. (Journal entries of format 3 may end with the
    /// record after the change, once a caller asks for it; format 2's entries read the same.)
    private static func upgradeToFormatThree(_ system: SystemDatabases, in txn: borrowing LMDBTransaction) throws {
        if try txn.get(system.meta, key: MetaKey.storeIdentifier) == nil {
            try txn.put(system.meta, key: MetaKey.storeIdentifier, value: newStoreIdentifier())
        }
        try writeCurrentFormat(system, in: txn)
    }

    /// Stamps the current format version in the meta database and the catalog.
    private static func writeCurrentFormat(_ system: SystemDatabases, in txn: borrowing LMDBTransaction) throws {
        try txn.put(system.meta, key: MetaKey.format, value: withUnsafeBytes(of: Catalog.currentFormatVersion.bigEndian) { Array($0) })
        if let stored = try txn.get(system.meta, key: MetaKey.catalog) {
            var catalog = try Catalog.decode(stored)
            catalog.formatVersion = Catalog.currentFormatVersion
            try txn.put(system.meta, key: MetaKey.catalog, value: catalog.encoded())
        }
    }

    /// Format 1 → 2, in the transaction that opens the store (all or nothing): commit headers move
    /// from `feedstore.commits` into the journal, after their commits' entries, and the newest
    /// sequence is no longer kept in the meta database (format 2 reads it from the journal, which
    /// saves writing two pages on every commit).
    private static func upgradeFromFormatOne(_ system: SystemDatabases, in txn: borrowing LMDBTransaction, path: String) throws {
        guard let commits = try txn.openDatabase(named: SystemDatabases.formatOneCommitsName, create: false) else {
            throw FeedstoreError.notAStore(path: path, reason: "database \(SystemDatabases.formatOneCommitsName) is missing")
        }
        var headers: [(sequence: UInt64, value: [UInt8])] = []
        try txn.withCursor(commits) { cursor in
            var found = try cursor.first()
            while found {
                headers.append((try JournalKeys.sequence(from: cursor.key), Array(cursor.value)))
                found = try cursor.next()
            }
        }
        for header in headers {
            _ = try header.value.withUnsafeBytes { try JournalKeys.decodeCommitHeader($0) }
            guard try txn.put(system.journal, key: JournalKeys.headerKey(header.sequence), value: header.value, noOverwrite: true) else {
                throw FeedstoreError.corruptData(what: "journal", reason: "commit \(header.sequence) already has a header")
            }
        }
        try txn.drop(commits, delete: true)
        _ = try txn.delete(system.meta, key: MetaKey.formatOneLastSequence)
        try txn.put(system.meta, key: MetaKey.format, value: [0, 0, 0, 2])
    }

    // MARK: Registration

    /// Brings the catalog in line with `declared`, in one write transaction. Unless the
    /// declaration copies another store's (`checkingClaims` false: replicas, loads), an index it
    /// would drop or rebuild that another open handle declares refuses it (`own`: this handle's
    /// claim, which does not count).
    static func register(_ declared: [Declaration], in core: StoreCore, options: StoreOptions, readOnlyReason handleReason: String? = nil,
                         checkingClaims: Bool = true, own: IndexClaim? = nil) throws
    {
        let schema = core.schema
        let readOnlyReason = handleReason ?? options.readOnlyReason ?? core.readOnlyReason
        let upToDate = declared.allSatisfy { entity in
            guard let existing = schema.catalog.entities[entity.name] else { return false }
            let stored = Set(existing.indexes.map(\.definition))
            var wanted = Set(entity.indexes)
            // A store written before entities had their primary-key order is read as it is;
            // the first handle that writes builds the order.
            if readOnlyReason != nil && !stored.contains(.primaryKeyOrder) { wanted.remove(.primaryKeyOrder) }
            return stored == wanted
        }
        let fieldsUpToDate = declared.allSatisfy { entity in
            schema.catalog.entities[entity.name].map { $0.declaredFields == entity.fields && $0.declaredKinds == entity.kinds } ?? false
        }
        // A read-only handle keeps the fields last stored: they only serve to check names.
        if upToDate && (fieldsUpToDate || readOnlyReason != nil) { return }
        if let reason = readOnlyReason {
            let missing = declared.first { schema.catalog.entities[$0.name] == nil }
            throw missing.map { FeedstoreError.unknownEntity($0.name, entities: schema.catalog.entities.keys.sorted()) }
                ?? FeedstoreError.readOnly(path: core.path, reason: "\(reason), and the declared indexes differ from the stored ones")
        }
        if checkingClaims {
            for entity in declared {
                let wanted = Set(entity.indexes)
                for index in schema.catalog.entities[entity.name]?.indexes ?? [] where !wanted.contains(index.definition) {
                    if let holder = IndexClaim.holders(of: index.definition, entity: entity.name, in: core.path, except: own).first {
                        throw FeedstoreError.indexInUse(entity: entity.name, index: index.definition.name, holder: holder.description)
                    }
                }
            }
        }
        let done = DispatchSemaphore(value: 0)
        var outcome: Result<Void, any Error> = .success(())
        try core.writer.submit(WriteQueue.Request(body: { tx in
            for entity in declared { try apply(entity, in: tx, progress: options.indexBuildProgress) }
        }, completion: { result in
            outcome = result
            done.signal()
        }))
        done.wait()
        try outcome.get()
        try core.refreshSchema()
    }

    struct Declaration {
        var name: String
        var primaryKeyKind: String
        /// The declared indexes and the primary-key order (``IndexDefinition/primaryKeyOrder``).
        var indexes: [IndexDefinition]
        /// The type's fields in their stored form; nil when they could not all be learned.
        var fields: [String]?
        /// The kinds the type reads its fields as (``CatalogEntity/declaredKinds``); nil when
        /// not known.
        var kinds: [String: String]?
    }

    private static func declaredFields<E: Entity>(of type: E.Type) -> DeclaredFields {
        E.fieldNames.map { DeclaredFields(stored: $0) } ?? DeclaredFields.of(E.self)
    }

    private static func primaryKeyKind<E: Entity>(of type: E.Type) -> String { E.ID.fieldKind }

    /// The indexes an entity declared, after a check, with the primary-key order every entity
    /// has (last, unless the list has it already: a catalog's copy keeps its place).
    static func withPrimaryKeyOrder(_ indexes: [IndexDefinition], of name: String) throws -> [IndexDefinition] {
        try checkIndexes(indexes.filter { $0 != .primaryKeyOrder }, of: name)
        return indexes.contains(.primaryKeyOrder) ? indexes : indexes + [.primaryKeyOrder]
    }

    /// Refuses indexes without a name, with a name declared twice or taken by the primary-key
    /// order, or without components.
    static func checkIndexes(_ indexes: [IndexDefinition], of name: String) throws {
        var seen = Set<String>()
        for index in indexes {
            func invalid(_ reason: String) -> FeedstoreError {
                .invalidIndexDefinition(entity: name, index: index.name, reason: reason)
            }
            if let problem = index.keyPathProblem { throw problem.error(entity: name, usedBy: "index \(name).\(index.name)") }
            guard !index.name.isEmpty else { throw invalid("the name is empty") }
            guard seen.insert(index.name).inserted else { throw invalid("the name is declared twice") }
            guard index.name != IndexDefinition.primaryKeyOrderName else {
                throw invalid("\(index.name) names every entity's primary-key order, which the store keeps without a declaration; give the index another name")
            }
            guard !index.components.isEmpty else { throw invalid("it has no components") }
            if let field = index.components.first(where: { $0.field.isEmpty }) { throw invalid("component \(field) has no field name") }
            let wordComponents = index.components.indices.filter { index.components[$0].field == IndexDefinition.wordComponent }
            if let words = index.words {
                guard !words.isEmpty else { throw invalid("a text index needs at least one field to take words from") }
                guard wordComponents == [0], !index.components[0].descending else {
                    throw invalid("a text index's first component is its words, ascending; declare it with IndexDefinition.text(_:fields:order:)")
                }
                guard !index.unique else { throw invalid("a text index cannot be unique: records share words") }
            } else if !wordComponents.isEmpty {
                throw invalid("\(IndexDefinition.wordComponent) is the words of a text index; declare one with IndexDefinition.text(_:fields:order:)")
            }
        }
    }

    static func declaration(of type: any Entity.Type) throws -> Declaration {
        let name = type.entityName
        let indexes = try withPrimaryKeyOrder(type.indexes, of: name)
        let fields = declaredFields(of: type)
        if fields.isComplete {
            for index in type.indexes {
                let uses = index.keyFields.map { ($0, "index \(name).\(index.name)") }
                    + (index.condition?.fields.sorted() ?? []).map { ($0, "the condition of index \(name).\(index.name)") }
                for (field, usedBy) in uses where !fields.contains(field) {
                    throw FeedstoreError.unknownField(entity: name, field: field, usedBy: usedBy, fields: fields.topLevel)
                }
            }
        }
        return Declaration(name: name, primaryKeyKind: primaryKeyKind(of: type), indexes: indexes,
                           fields: fields.isComplete ? fields.stored : nil,
                           // A type that names its fields (`fieldNames`) declares no kinds: an
                           // empty table, not nil, which means the kinds were never learned.
                           kinds: fields.isComplete ? fields.kinds : nil)
    }

    private static func apply(_ declared: Declaration, in tx: WriteTransaction,
                              progress: (@Sendable (String, Int, Int) -> Void)?) throws
    {
        // Indexes are dropped and rebuilt below; no count change may be left to apply to them.
        try tx.applyDeferredCounts(of: nil)
        var databases: [String: LMDBDatabase] = [:]
        if tx.schema.catalog.entities[declared.name] == nil {
            try tx.updateCatalog({ catalog in
                let entity = CatalogEntity(name: declared.name, id: catalog.nextEntityID, primaryKeyKind: declared.primaryKeyKind, fields: [],
                                           indexes: [], nextFieldID: 1)
                catalog.nextEntityID += 1
                catalog.entities[declared.name] = entity
            }, databases: [
                "records:\(declared.name)": try tx.access { try $0.openDatabase(named: "records:\(declared.name)", create: true)! },
            ])
        }
        if let entity = tx.schema.catalog.entities[declared.name],
           entity.declaredFields != declared.fields || entity.declaredKinds != declared.kinds
        {
            try tx.updateCatalog { catalog in
                catalog.entities[declared.name]!.declaredFields = declared.fields
                catalog.entities[declared.name]!.declaredKinds = declared.kinds
            }
        }
        let existing = try tx.schema.entity(declared.name)
        // Drop indexes no longer declared, or declared differently (rebuilt below).
        for index in existing.indexes where !declared.indexes.contains(index.definition) {
            try tx.access { txn in
                try txn.drop(index.database, delete: true)
                try txn.drop(index.counted.counts, delete: true)
            }
            try tx.updateCatalog { catalog in
                catalog.entities[declared.name]!.indexes.removeAll { $0.id == index.id }
            }
        }
        for definition in declared.indexes where tx.schema.entities[declared.name]!.catalog.index(named: definition.name) == nil {
            let index = CatalogIndex(id: tx.schema.catalog.nextIndexID, entity: declared.name, definition: definition)
            for name in [index.databaseName, index.countsDatabaseName] {
                databases[name] = try tx.access { txn in
                    let db = try txn.openDatabase(named: name, create: true)!
                    // A database left by an earlier definition under the same name starts empty.
                    try txn.drop(db, delete: false)
                    return db
                }
            }
            try tx.updateCatalog({ catalog in
                catalog.nextIndexID += 1
                catalog.entities[declared.name]!.indexes.append(index)
            }, databases: databases)
            try build(try tx.schema.entity(declared.name).index(named: definition.name), of: declared.name, in: tx,
                      progress: progress)
        }
    }

    /// Fills a new index from every record of its entity.
    private static func build(_ index: IndexSchema, of entityName: String, in tx: WriteTransaction,
                              progress: (@Sendable (String, Int, Int) -> Void)?) throws
    {
        let total = try tx.count(entity: entityName)
        var done = 0
        var entity = try tx.schema.entity(entityName)
        var keys: [(key: [UInt8], primaryKey: [UInt8], components: [FieldValue])] = []
        try tx.scan(entity: entityName, index: nil, range: .all, reverse: false, offset: 0, limit: nil) { key, value in
            let fields = try tx.decodeFields(value, of: &entity, id: nil)
            for entry in try index.keys(of: fields, primaryKey: Array(key)) {
                keys.append((entry, Array(key), index.isText ? [] : index.components(of: fields)))
            }
            done += 1
            if done % 10_000 == 0 { progress?(index.definition.name, done, total) }
        }
        // Entries go in key order (cheap appends); uniqueness shows as equal neighbours.
        keys.sort { $0.key.sortsBefore($1.key) }
        for (i, entry) in keys.enumerated() {
            try tx.checkKeySize(entry.key, entity: entity, index: index.definition.name)
            if let unique = index.uniqueKey(entry.components), i > 0, keys[i - 1].components == unique {
                throw index.violation(of: unique, heldBy: keys[i - 1].primaryKey)
            }
            try tx.access { _ = try $0.put(index.database, key: entry.key, value: []) }
        }
        try tx.access { try index.counted.rebuild(in: $0) }
        progress?(index.definition.name, total, total)
    }
}
