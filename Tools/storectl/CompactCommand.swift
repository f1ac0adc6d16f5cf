import ArgumentParser
import Feedstore
import Foundation

struct CompactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Write a compacted copy of a store (LMDB's compacting copy), safe while the store is in use.",
        discussion: """
        The copy is a consistent snapshot without free pages, with the store's own file modes \
        (0600 for files and 0700 for the directory unless the store was made otherwise). DEST must \
        not exist (its parent directory must) or be an empty directory (one holding only a copy cut short by a crash counts as empty); with --force it may also be a store, which is replaced \
        (no process may have it open). The source is only read.

        Example:
          storectl compact ./demo-store ./demo-store-compact
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Argument(help: "Where to write the copy (a new or empty directory).")
    var destination: String

    @Flag(help: "Replace a store already at the destination.")
    var force = false

    func run() throws {
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            do {
                try store.copy(to: destination, compact: true, replace: force)
            } catch let FeedstoreError.destinationExists(path, reason) where !force && reason.hasPrefix("it exists") {
                StoreAccess.fail("cannot copy the store to \(path): \(reason); choose a new directory, or give --force to replace a store there")
            }
            Output.line("compacted \(path) into \(destination)")
        }
    }
}
