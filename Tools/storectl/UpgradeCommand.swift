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
        let store = try Store(path: path)
        let version = try store.catalog.formatVersion
        store.close()
        Output.line("\(path) is in format \(version)")
    }
}
