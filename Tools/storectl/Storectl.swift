import ArgumentParser

@main
struct Storectl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storectl",
        abstract: "Inspect and exercise Feedstore stores from the command line.",
        discussion: """
        Every command that only reads opens the store read-only and is safe on a store that
        another process is writing.
        """,
        subcommands: [InspectCommand.self, DumpCommand.self, GetCommand.self, JournalCommand.self, VerifyCommand.self, WatchCommand.self,
                      CompactCommand.self,
                      DemoCommand.self]
    )
}
