import FeedstoreDemo
import Foundation

/// A write log replayed up to a crash point: for each data file followed, what a power loss keeps
/// of it for certain and what it may keep, and the renames and directory syncs so far.
struct LogReplay {
    /// One file's content: what the disk holds for certain (as of the file's last completed
    /// sync), and the pages written since, any of which a power loss may keep or lose.
    struct File {
        var durable: [UInt8]
        var pending: [(offset: Int, bytes: ArraySlice<UInt8>)] = []
        var pendingSize: Int?
        /// The log index of the file's last completed sync (-1: none yet).
        var lastSync = -1

        init(_ durable: [UInt8]) { self.durable = durable }

        /// Notes a write page by page: a power loss keeps or loses each page of it on its own.
        mutating func write(at offset: Int, _ bytes: [UInt8]) {
            var at = 0
            while at < bytes.count {
                let end = min(bytes.count, (offset + at) / LogReplay.page * LogReplay.page + LogReplay.page - offset)
                pending.append((offset + at, bytes[at..<end]))
                at = end
            }
        }

        mutating func sync(at index: Int) {
            for write in pending { Self.apply(write, to: &durable) }
            if let size = pendingSize { Self.resize(&durable, to: size) }
            pending = []
            pendingSize = nil
            lastSync = index
        }

        /// The contents a power loss could leave: the durable image plus each subset of the
        /// pending pages (every subset when there are at most two, else none, all, and `samples`
        /// chosen at random), with a pending truncate applied or not.
        func images(samples: Int = 2, using rng: inout SeededGenerator) -> [[UInt8]] {
            let subsets: [[Int]]
            if pending.count <= 2 {
                subsets = (0..<(1 << pending.count)).map { mask in (0..<pending.count).filter { mask & (1 << $0) != 0 } }
            } else {
                subsets = [[], Array(pending.indices)] + (0..<samples).map { _ in pending.indices.filter { _ in Bool.random(using: &rng) } }
            }
            return subsets.map { subset in
                var image = durable
                for i in subset { Self.apply(pending[i], to: &image) }
                if let size = pendingSize, Bool.random(using: &rng) { Self.resize(&image, to: size) }
                return image
            }
        }

        static func apply(_ write: (offset: Int, bytes: ArraySlice<UInt8>), to image: inout [UInt8]) {
            if image.count < write.offset + write.bytes.count { image += [UInt8](repeating: 0, count: write.offset + write.bytes.count - image.count) }
            image.replaceSubrange(write.offset..<write.offset + write.bytes.count, with: write.bytes)
        }

        static func resize(_ image: inout [UInt8], to size: Int) {
            if image.count > size { image.removeLast(image.count - size) } else { image += [UInt8](repeating: 0, count: size - image.count) }
        }
    }

    static let page = 4_096

    let operations: [WriteLog.Operation]
    /// The files followed, by the path the process opened them with; writes to others are left out.
    var files: [String: File]
    /// Renames and directory syncs replayed so far, with their log indexes.
    var renames: [(index: Int, from: String, to: String)] = []
    var directorySyncs: [(index: Int, path: String)] = []
    /// Directories and data files made so far, with their log indexes.
    var made: [(index: Int, path: String)] = []
    /// The next operation to replay: a crash "at i" happens after operations 0..<i.
    private(set) var next = 0
    private var file = ""

    init(_ log: WriteLog, files: [String: File]) {
        operations = log.operations
        self.files = files
    }

    /// The entries made so far (directories and files) that lead to `path`, and whether each
    /// is durable: its parent directory was synced after it was made.
    func entries(leadingTo path: String) -> [(path: String, durable: Bool)] {
        let target = Self.normalized(path)
        return made.filter { target == Self.normalized($0.path) || target.hasPrefix(Self.normalized($0.path) + "/") }.map { entry in
            let parent = (Self.normalized(entry.path) as NSString).deletingLastPathComponent
            return (entry.path, directorySyncs.contains { $0.index > entry.index && Self.normalized($0.path) == parent })
        }
    }

    static func normalized(_ path: String) -> String { (path as NSString).standardizingPath }

    /// Replays the operations before `point`.
    mutating func advance(to point: Int) {
        while next < point {
            switch operations[next] {
            case let .file(path): file = path
            case let .write(offset, bytes): files[file]?.write(at: offset, bytes)
            case .sync: files[file]?.sync(at: next)
            case let .truncate(size): files[file]?.pendingSize = size
            case let .rename(from, to): renames.append((next, from, to))
            case let .directorySync(path): directorySyncs.append((next, path))
            case let .directoryMade(path), let .fileMade(path): made.append((next, path))
            case .output, .unmodelled: break
            }
            next += 1
        }
    }
}
