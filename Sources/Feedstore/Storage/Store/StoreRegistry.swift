import Foundation

/// The cores open in this process, by canonical directory path, so that every ``Store`` handle
/// on one store shares one LMDB environment (opening it twice in a process breaks LMDB's locks).
enum StoreRegistry {
    private struct Entry {
        let core: StoreCore
        var handles: Int
    }

    private static let open = Protected<[String: Entry]>([:])

    static func acquire(path: String, options: StoreOptions, make: () throws -> StoreCore) throws -> StoreCore {
        try open.withLock { cores in
            if var entry = cores[path] {
                // A core read-only because of its files serves every handle; one opened read-only
                // by choice cannot serve a handle that wants to write.
                if entry.core.options.opensReadOnly && !options.opensReadOnly {
                    throw FeedstoreError.incompatibleHandle(path: path, reason: "it is already open read-only in this process")
                }
                if entry.core.options.immutable && !options.immutable {
                    throw FeedstoreError.incompatibleHandle(path: path, reason: "it is already open immutable (without locks) in this process")
                }
                try entry.core.adopt(options)
                entry.handles += 1
                cores[path] = entry
                return entry.core
            }
            let core = try make()
            cores[path] = Entry(core: core, handles: 1)
            return core
        }
    }

    /// Whether a store at the canonical `path` is open in this process.
    static func isOpen(path: String) -> Bool { open.withLock { $0[path] != nil } }

    /// Releases one handle; the last one closes the environment.
    static func release(_ core: StoreCore) {
        let last: Bool = open.withLock { cores in
            guard var entry = cores[core.path] else { return false }
            entry.handles -= 1
            if entry.handles == 0 {
                cores[core.path] = nil
                return true
            }
            cores[core.path] = entry
            return false
        }
        if last { core.close() }
    }
}
