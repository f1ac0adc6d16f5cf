import Foundation

/// The indexes one open handle declared, kept where every process that opens the store sees
/// them, so that a handle whose declaration would drop or rebuild an index that another open
/// handle declares is refused (``FeedstoreError/indexInUse(entity:index:holder:)``) instead of
/// pulling the index from under it.
///
/// Each handle that declares entities holds a file in the store directory's `handles` folder,
/// `<process>-<n>.json`, under an exclusive `flock` for as long as it is open. A closing handle
/// removes its file before it lets the lock go; the kernel lets the lock of a killed process go,
/// so a file whose lock can be taken belongs to no open handle, and is removed by whoever finds
/// it. A store whose folder cannot be written (read-only media) keeps no claims.
final class IndexClaim: Sendable {
    /// What the file holds.
    struct Record: Codable, Sendable {
        var process: Int32
        var program: String
        var opened: Date
        /// Per entity, the indexes the handle declared.
        var entities: [String: [IndexDefinition]]

        /// The handle, as an error names it.
        var description: String {
            "process \(process) (\(program)), open since \(ISO8601DateFormatter().string(from: opened))"
        }
    }

    static let folderName = "handles"
    private static let counter = Protected(0)

    let file: String
    /// The file's descriptor, under its lock; -1 while suspended (``suspend()``).
    private let descriptor: Protected<Int32>
    private let record: Protected<Record>
    private let fileMode: mode_t

    private init(file: String, descriptor: Int32, record: Record, fileMode: mode_t) {
        self.file = file
        self.descriptor = Protected(descriptor)
        self.record = Protected(record)
        self.fileMode = fileMode
    }

    /// Claims `entities`' indexes for a handle of the store at `directory`; nil when the folder
    /// cannot be written. The folder and the file take the permissions of the store's data
    /// file, so that whoever may open the store may see and make claims, and no one else.
    static func take(in directory: String, entities: [String: [IndexDefinition]]) -> IndexClaim? {
        let folder = directory + "/" + folderName
        var data = stat()
        guard stat(directory + "/data.mdb", &data) == 0 else { return nil }
        let fileMode = mode_t(data.st_mode) & 0o666, folderMode = fileMode | ((fileMode & 0o444) >> 2)
        if mkdir(folder, folderMode) == 0 {
            chmod(folder, folderMode)
        } else if errno != EEXIST {
            return nil
        }
        let n = counter.withLock { count -> Int in
            count += 1
            return count
        }
        let file = folder + "/\(getpid())-\(n)-\(UInt32.random(in: 0 ... .max)).json"
        let record = Record(process: getpid(), program: ProcessInfo.processInfo.processName, opened: Date(), entities: entities)
        guard let descriptor = make(file, record: record, mode: fileMode) else { return nil }
        return IndexClaim(file: file, descriptor: descriptor, record: record, fileMode: fileMode)
    }

    /// Writes `record` to `file`, locked; the descriptor, or nil. Written and locked under a
    /// name readers skip, then renamed: a reader never meets a claim without its content or its
    /// lock.
    private static func make(_ file: String, record: Record, mode: mode_t) -> Int32? {
        let temporary = (file as NSString).deletingLastPathComponent + "/." + (file as NSString).lastPathComponent + ".tmp"
        let descriptor = open(temporary, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { return nil }
        fchmod(descriptor, mode)
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0, write(record, to: descriptor), rename(temporary, file) == 0 else {
            unlink(temporary)
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Adds an entity's indexes to the claim (a handle declared it after opening).
    func add(entity: String, indexes: [IndexDefinition]) {
        record.withLock { record in
            record.entities[entity] = indexes
            let descriptor = descriptor.current
            if descriptor >= 0 { _ = Self.write(record, to: descriptor) }
        }
    }

    /// Ends the claim: the file goes before the lock, so no reader takes it for a killed handle's.
    func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            unlink(file)
            close(descriptor)
            descriptor = -1
        }
    }

    /// Lets go of the file and its lock while the store is suspended: another process may then
    /// change the indexes, as after a close.
    func suspend() { release() }

    /// Makes the file again, as it was, after ``suspend()``.
    func resume() {
        record.withLock { record in
            descriptor.withLock { descriptor in
                guard descriptor < 0 else { return }
                descriptor = Self.make(file, record: record, mode: fileMode) ?? -1
            }
        }
    }

    private static func write(_ record: Record, to descriptor: Int32) -> Bool {
        guard let bytes = try? JSONEncoder().encode(record), ftruncate(descriptor, 0) == 0 else { return false }
        return bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) == $0.count }
    }

    /// The open handles of the store at `directory`, other than `own`, that declare `definition`
    /// for `entity`. Claims of handles no longer open are removed on the way.
    static func holders(of definition: IndexDefinition, entity: String, in directory: String, except own: IndexClaim?) -> [Record] {
        let folder = directory + "/" + folderName
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        var holders: [Record] = []
        for name in names where name.hasSuffix(".json") && folder + "/" + name != own?.file {
            let path = folder + "/" + name
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                // No handle holds it: its process ended without closing.
                unlink(path)
                continue
            }
            guard let data = FileManager.default.contents(atPath: path),
                  let record = try? JSONDecoder().decode(Record.self, from: data) else { continue }
            if record.entities[entity]?.contains(definition) == true { holders.append(record) }
        }
        return holders
    }
}
