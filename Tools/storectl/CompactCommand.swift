import ArgumentParser
import Feedstore
import Foundation

struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Write a compacted copy of a store (LMDB's compacting copy), safe while the store is in use.",
        discussion: """
        The copy is a consistent snapshot without free pages. DEST must not exist or be an empty
        directory; the source is only read.
        Example: storectl compact ./demo-store ./demo-store-compact
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Argument(help: "Where to write the copy (a new or empty directory).")
    var destination: String

    func run() throws {
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            try store.copy(to: destination, compact: true)
            StoreAccess.write("compacted \(path) into \(destination)")
        }
    }
}
