import Foundation

extension Store {
    /// Writes a consistent copy of the store to `destination` (LMDB's `mdb_env_copy2`), compacted
    /// (free pages left out) when `compact` is true. Safe while other handles and processes write.
    /// - Throws: ``FeedstoreError/notAStore(path:reason:)`` when `destination` exists and is not
    ///   an empty directory; LMDB errors otherwise. A failed copy leaves the source untouched.
    public func copy(to destination: String, compact: Bool) throws {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: destination, isDirectory: &isDirectory) {
            guard isDirectory.boolValue, (try? fm.contentsOfDirectory(atPath: destination))?.isEmpty == true else {
                throw FeedstoreError.notAStore(path: destination, reason: "the destination exists and is not an empty directory")
            }
        } else {
            try fm.createDirectory(atPath: destination, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        do {
            try core.environment.copy(to: destination, compact: compact)
        } catch {
            throw core.translate(error)
        }
    }
}
