import ArgumentParser
import Feedstore
import Foundation

struct UpgradeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upgrade",
        abstract: "Upgrade a store written in an older format to the current one.",
        discussion: """
        Opens the store for writing, which upgrades it in one transaction (all or nothing), and \
        closes it. A store already in the current format is left as it is. Read-only commands \
        refuse an older format until it is upgraded.

        Example: storectl upgrade ./demo-store
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    func run() throws {
        guard FileManager.default.fileExists(atPath: path + "/data.mdb") else {
            StoreAccess.fail("\(path) holds no store (no data.mdb)")
        }
        // The format before: a read-only handle refuses an older one, naming it.
        let before: UInt32
        do {
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            before = try store.catalog.formatVersion
            store.close()
        } catch let FeedstoreError.formatUpgradeNeeded(_, found, _) {
            before = found
        }
        let store = try Store(path: path)
        let after = try store.catalog.formatVersion
        store.close()
        Output.line(before == after ? "\(path) is already in format \(after); nothing to upgrade"
                                    : "upgraded \(path) from format \(before) to format \(after)")
    }
}
