import ArgumentParser
import Feedstore

@main
struct Storectl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storectl",
        abstract: "Inspect and exercise Feedstore stores from the command line.",
        discussion: """
        Every command that only reads opens the store read-only and is safe on a store that \
        another process is writing.
        """,
        version: "storectl \(feedstoreVersion) (store format \(Catalog.currentFormatVersion))",
        subcommands: [InspectCommand.self, DumpCommand.self, GetCommand.self, JournalCommand.self, VerifyCommand.self, WatchCommand.self,
                      CompactCommand.self, UpgradeCommand.self,
                      DemoCommand.self]
    )

    /// Runs the command; a store failure (missing, damaged, newer format, full disk…) from any
    /// command becomes `storectl: <what and where>` and exit status 2.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let error as FeedstoreError {
            StoreAccess.fail("\(error)")
        } catch {
            exit(withError: error)
        }
    }
}
