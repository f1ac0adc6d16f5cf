import ArgumentParser
import DemoConsole

/// The README's demo, built on its own: the library and the demo feed, without the servers and
/// replication that `storectl` carries, so that a fresh machine shows it within minutes.
@main
struct FeedstoreDemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedstore-demo",
        abstract: DemoRunOptions.abstract,
        discussion: DemoRunOptions.discussion + "\n\nExample: feedstore-demo ./demo-store --messages 100000"
    )

    @OptionGroup var options: DemoRunOptions

    func run() throws { try options.run() }
}
