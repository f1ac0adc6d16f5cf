import ArgumentParser
import Feedstore
import FeedstoreJetStream
import Foundation

struct LoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Write records from JSON lines into a store: the inverse of dump --format jsonl.",
        discussion: """
        Each line is one record: a line of dump's JSON lines ({"id", "key", "record"}) or the \
        record's fields alone, with its primary key in "id". A record with an id already stored \
        replaces it.

        Records are held to what the entity's Swift type reads: the fields and kinds its store \
        learned when the application opened it, or those of the store given to --like. Values \
        convert where nothing is lost (ISO 8601 text to dates, base64 to bytes, UUID text to \
        UUIDs, integral numbers between integer and double fields); a value of another kind, a \
        required field that is missing, or a field the type does not declare refuses the line \
        (--keep-undeclared-fields stores such fields). An entity without a Swift type holds \
        each field to the kind its records gave it first.

        Records are written in transactions of --batch records, each all or nothing: a line \
        that does not parse or a record that is refused stops the load, the transactions before \
        it stay, and the message names the line. An entity the store does not have yet is \
        declared as in the store given to --like (its key kind, indexes, fields and kinds); \
        without --like it gets the kind of the first id and no indexes.

        With --nats and --stream, PATH is a replica: each transaction is forwarded to the \
        stream's primary (storectl ship --accept-writes), which applies it and checks it as \
        above, and the load goes on once the replica has applied it. Each transaction is a \
        request with an id, <--request-prefix>:<first line>-<last line>: a load killed and run \
        again with the same prefix and input applies each transaction at most once.

        Examples:
          storectl dump ./demo-store --entity Message --jsonl > messages.jsonl
          storectl load ./copy --entity Message --like ./demo-store \\
            --input messages.jsonl
          storectl dump ./demo-store --entity Contact --jsonl \\
            | storectl load ./copy --entity Contact --like ./demo-store --input -
          storectl load ./replica --entity Message --input messages.jsonl \\
            --nats nats://127.0.0.1:4222 --stream FEED --request-prefix messages-1
        """
    )

    @Argument(help: "The store directory (created when missing).")
    var path: String

    @Option(help: "The entity to write.")
    var entity: String

    @Option(help: "Read from this file instead of standard input (- is standard input).")
    var input: String?

    @Option(help: "A store whose declaration of the entity (key kind and indexes) a new entity takes.")
    var like: String?

    @Flag(help: "Store fields the entity's type does not declare instead of refusing their records.")
    var keepUndeclaredFields = false

    @Option(help: "Records per transaction (default 10000, or 200 with --nats).")
    var batch: Int?

    @Option(name: .customLong("nats"), help: "Forward the transactions through this NATS server to the primary of --stream: PATH is a replica.")
    var natsURL: String?

    @Option(help: "With --nats: the stream the replica follows.")
    var stream: String?

    @Option(help: "With --nats: the prefix of the transactions' request ids (default: a new UUID); give it again to rerun a load safely.")
    var requestPrefix: String?

    @Option(help: "With --nats: seconds each transaction may take before the load stops.")
    var timeout: Int = 30

    @Flag(help: "Print no progress.")
    var quiet = false

    /// Records written between releases of the pages read.
    static let recordsPerRelease = 1_000

    func validate() throws {
        if let batch, batch < 1 { throw ValidationError("--batch takes a number of records, 1 or more") }
        if (natsURL == nil) != (stream == nil) { throw ValidationError("--nats and --stream go together") }
        if natsURL == nil, requestPrefix != nil { throw ValidationError("--request-prefix is for forwarded loads (--nats and --stream)") }
        if natsURL != nil, like != nil || keepUndeclaredFields {
            throw ValidationError("a forwarded load writes what the primary declares: --like and --keep-undeclared-fields are for local loads")
        }
        if timeout < 1 { throw ValidationError("--timeout takes seconds, 1 or more") }
    }

    /// Records per transaction.
    private var recordsPerTransaction: Int { batch ?? (natsURL == nil ? 10_000 : 200) }

    func run() throws {
        let source = input == "-" ? nil : input
        guard let lines = LineReader(path: source) else { StoreAccess.fail("cannot read \(source ?? "standard input"): \(String(cString: strerror(errno)))") }
        if natsURL != nil, !FileManager.default.fileExists(atPath: path + "/data.mdb") {
            StoreAccess.fail("\(path) holds no store; a forwarded load writes through a replica (storectl follow makes one)")
        }
        let store = try Store(path: path)
        defer { store.close() }
        // A replica that has applied nothing yet has no state; a store with commits and none is a primary.
        if natsURL != nil, try store.read({ try $0.replicaState() == nil && $0.journalBounds().last > 0 }) {
            StoreAccess.fail("\(path) is not a replica; load into a primary without --nats and --stream")
        }
        let forwarding = try natsURL.map { url in
            try ReplicaWriter(replica: store, connection: .fromEnvironment(url: url), stream: stream!)
        }
        let prefix = requestPrefix ?? UUID().uuidString.lowercased()
        var pending: [(id: FieldValue, fields: [String: FieldValue], line: Int)] = []
        var loaded = 0
        var lineNumber = 0
        var declared = try store.catalog.entities[entity] != nil
        // The declaration --like's store holds, for an entity this store does not have yet.
        let template = try like.map { like in try StoreAccess.withReadOnlyStore(like) { try StoreAccess.entity(entity, in: $0) } }
        func commit() throws {
            guard !pending.isEmpty else { return }
            if let forwarding {
                try forward(pending, through: forwarding, prefix: prefix, loaded: loaded)
                loaded += pending.count
                pending.removeAll(keepingCapacity: true)
                return
            }
            if !declared {
                try declareEntity(in: store, like: template, firstID: pending[0].id)
                declared = true
            }
            var refused: Int?
            do {
                try store.write { tx in
                    for (i, record) in pending.enumerated() {
                        do {
                            try tx.put(entity: entity, id: record.id, fields: record.fields, keepingUndeclaredFields: keepUndeclaredFields)
                        } catch {
                            refused = record.line
                            throw error
                        }
                        // Inserts land all over the indexes; the pages they read stay resident
                        // (and counted in RSS) until released.
                        if i % Self.recordsPerRelease == Self.recordsPerRelease - 1 { try store.releaseMappedPages() }
                    }
                }
            } catch let error as FeedstoreError {
                let failure = refused.map { "line \($0) was refused" } ?? "the transaction ending at line \(lineNumber) failed"
                StoreAccess.fail("\(failure): \(error); \(loaded.formatted()) records were loaded in earlier transactions, "
                    + "the \(pending.count.formatted()) of lines \(pending[0].line)–\(pending[pending.count - 1].line) were not")
            }
            loaded += pending.count
            pending.removeAll(keepingCapacity: true)
            if !quiet { Output.diagnostic("loaded \(loaded.formatted()) records\n") }
        }
        while let line = lines.next() {
            lineNumber += 1
            if line.allSatisfy(\.isWhitespace) { continue }
            switch Self.record(line) {
            case let .success((id, fields)): pending.append((id, fields, lineNumber))
            case let .failure(problem):
                StoreAccess.fail("line \(lineNumber) \(problem.reason); \(loaded.formatted()) records were loaded in earlier transactions, "
                    + "the \(pending.count.formatted()) read since were not")
            }
            if pending.count == recordsPerTransaction { try commit() }
        }
        try commit()
        if forwarding != nil {
            Output.line("loaded \(loaded.formatted()) \(entity) records through the primary of stream \(stream!); replica \(path) holds them")
            return
        }
        try store.sync()
        Output.line("loaded \(loaded.formatted()) \(entity) records into \(path)")
    }

    /// Sends one transaction to the primary and waits until the replica holds it.
    private func forward(_ records: [(id: FieldValue, fields: [String: FieldValue], line: Int)], through writer: ReplicaWriter,
                         prefix: String, loaded: Int) throws
    {
        let requestID = "\(prefix):\(records[0].line)-\(records[records.count - 1].line)"
        let writes = records.map { RecordWrite.put(entity: entity, id: $0.id, fields: $0.fields) }
        let sequence: UInt64
        do {
            sequence = try writer.writeBlocking(writes, requestID: requestID, timeout: .seconds(timeout))
        } catch {
            let lines = "lines \(records[0].line)–\(records[records.count - 1].line)"
            let outcome = switch error {
            case JetStreamError.writeOutcomeUnknown: "may have been applied (run the load again with --request-prefix \(prefix) to apply it at most once)"
            case JetStreamError.replicaBehind: "were applied, but the replica did not show them in time"
            default: "were not applied"
            }
            StoreAccess.fail("\(error); the \(records.count.formatted()) records of \(lines) \(outcome); \(loaded.formatted()) records were loaded before them")
        }
        if !quiet { Output.diagnostic("loaded \((loaded + records.count).formatted()) records (commit \(sequence))\n") }
    }

    /// Why a line is not a record, completing "line N …".
    struct NotARecord: Error {
        var reason: String
    }

    /// A line's primary key and fields, or why it is not a record.
    static func record(_ line: String) -> Result<(id: FieldValue, fields: [String: FieldValue]), NotARecord> {
        let expected = #"a JSON object with an "id", or dump's {"id", "record"}"#
        let value: FieldValue
        do {
            value = try FieldValue(jsonText: line)
        } catch let FeedstoreError.corruptData(_, reason) {
            return .failure(NotARecord(reason: "is not a record: \(reason)"))
        } catch {
            return .failure(NotARecord(reason: "is not a record: \(error)"))
        }
        guard case let .object(object) = value else {
            let found = switch value {
            case .null: "null"
            case .bool: "a boolean"
            case .array: "an array"
            case .string: "a string"
            default: "a number"
            }
            return .failure(NotARecord(reason: "is \(found), not a record (\(expected))"))
        }
        if case let .object(fields)? = object["record"] {
            guard let id = object["id"] ?? fields["id"] else { return .failure(NotARecord(reason: "has a record but no \"id\" (\(expected))")) }
            return .success((id, fields))
        }
        guard let id = object["id"] else { return .failure(NotARecord(reason: "has no \"id\" (\(expected))")) }
        return .success((id, object))
    }

    /// Declares the entity as `--like`'s store does, or from its first id.
    private func declareEntity(in store: Store, like source: CatalogEntity?, firstID: FieldValue) throws {
        if let source {
            try store.declare(like: source)
            return
        }
        let kind = switch firstID {
        case .int: "int"
        case .uint: "uint"
        case .uuid: "uuid"
        default: "string"
        }
        try store.declare(entity: entity, primaryKeyKind: kind)
    }
}

/// Lines of a file or of standard input, read in large blocks.
final class LineReader {
    private let handle: UnsafeMutablePointer<FILE>
    private let ownsHandle: Bool
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0

    init?(path: String?) {
        if let path {
            guard let file = fopen(path, "r") else { return nil }
            handle = file
            ownsHandle = true
        } else {
            guard let input = fdopen(STDIN_FILENO, "r") else { return nil }
            handle = input
            ownsHandle = false
        }
    }

    deinit {
        free(buffer)
        if ownsHandle { fclose(handle) }
    }

    /// The next line without its line break, or nil at the end.
    func next() -> String? {
        let length = getline(&buffer, &capacity, handle)
        guard length >= 0, let buffer else { return nil }
        var end = length
        while end > 0, buffer[end - 1] == 0x0A || buffer[end - 1] == 0x0D { end -= 1 }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: end) { String(decoding: UnsafeBufferPointer(start: $0, count: end), as: UTF8.self) }
    }
}
