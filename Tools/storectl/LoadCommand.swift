import ArgumentParser
import Feedstore
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

        Examples:
          storectl dump ./demo-store --entity Message --jsonl > messages.jsonl
          storectl load ./copy --entity Message --like ./demo-store \\
            --input messages.jsonl
          storectl dump ./demo-store --entity Contact --jsonl \\
            | storectl load ./copy --entity Contact --like ./demo-store --input -
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

    @Option(help: "Records per transaction.")
    var batch: Int = 10_000

    @Flag(help: "Print no progress.")
    var quiet = false

    /// Records written between releases of the pages read.
    static let recordsPerRelease = 1_000

    func validate() throws {
        if batch < 1 { throw ValidationError("--batch takes a number of records, 1 or more") }
    }

    func run() throws {
        let source = input == "-" ? nil : input
        guard let lines = LineReader(path: source) else { StoreAccess.fail("cannot read \(source ?? "standard input"): \(String(cString: strerror(errno)))") }
        let store = try Store(path: path)
        defer { store.close() }
        var pending: [(id: FieldValue, fields: [String: FieldValue], line: Int)] = []
        var loaded = 0
        var lineNumber = 0
        var declared = try store.catalog.entities[entity] != nil
        // The declaration --like's store holds, for an entity this store does not have yet.
        let template = try like.map { like in try StoreAccess.withReadOnlyStore(like) { try StoreAccess.entity(entity, in: $0) } }
        func commit() throws {
            guard !pending.isEmpty else { return }
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
            if !quiet { FileHandle.standardError.write(Data("loaded \(loaded.formatted()) records\n".utf8)) }
        }
        while let line = lines.next() {
            lineNumber += 1
            if line.allSatisfy(\.isWhitespace) { continue }
            guard let (id, fields) = Self.record(line) else {
                StoreAccess.fail("line \(lineNumber) is not a record (a JSON object with an \"id\", or dump's {\"id\", \"record\"}); "
                    + "\(loaded.formatted()) records were loaded in earlier transactions, the \(pending.count.formatted()) read since were not")
            }
            pending.append((id, fields, lineNumber))
            if pending.count == batch { try commit() }
        }
        try commit()
        try store.sync()
        Output.line("loaded \(loaded.formatted()) \(entity) records into \(path)")
    }

    /// A line's primary key and fields, or nil when it is not a record.
    static func record(_ line: String) -> (id: FieldValue, fields: [String: FieldValue])? {
        guard let value = try? FieldValue(jsonText: line), case let .object(object) = value else { return nil }
        if case let .object(fields)? = object["record"] {
            guard let id = object["id"] ?? fields["id"] else { return nil }
            return (id, fields)
        }
        guard let id = object["id"] else { return nil }
        return (id, object)
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
