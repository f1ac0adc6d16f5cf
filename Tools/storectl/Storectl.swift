import ArgumentParser
import Logging
import Feedstore
import FeedstoreJetStream
import Foundation

@main
struct Storectl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storectl",
        abstract: "Inspect and exercise Feedstore stores from the command line.",
        discussion: """
        Every command that only reads opens the store read-only and is safe on a store that \
        another process is writing.

        Exit statuses: 0 done; 1 verify found problems; 2 an error (bad arguments or input, a \
        missing or damaged store); 3 get found no such record.
        """,
        version: "storectl \(feedstoreVersion) (store format \(Catalog.currentFormatVersion), LMDB \(lmdbVersion), \(lmdbLocking))",
        subcommands: [InspectCommand.self, DumpCommand.self, GetCommand.self, CountCommand.self, JournalCommand.self, VerifyCommand.self, WatchCommand.self,
                      CompactCommand.self, LoadCommand.self, UpgradeCommand.self, ShipCommand.self, FollowCommand.self, PromoteCommand.self,
                      ServeCommand.self, DemoCommand.self]
    )

    /// Runs the command. Exit statuses: 0 ok, 1 `verify` findings, 2 an error (a usage error,
    /// or a store failure such as missing, damaged, newer format or full disk, reported as
    /// `storectl: <what and where>`), 3 `get` found no such record.
    static func main() {
        Output.ignoreBrokenPipes()
        // A parent may have blocked Ctrl-C and SIGTERM (a test runner, some supervisors), which
        // children inherit: the commands that run until stopped stop cleanly on them.
        var stops = sigset_t()
        sigemptyset(&stops)
        sigaddset(&stops, SIGINT)
        sigaddset(&stops, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &stops, nil)
        // storectl prints its own progress; the library's logs go to stderr only when asked
        // for, at FEEDSTORE_LOG_LEVEL (trace, debug, info, notice, warning, error).
        let level = ProcessInfo.processInfo.environment["FEEDSTORE_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        do {
            var command = try parseAsRoot()
            try command.run()
            Output.flush()
        } catch let error as FeedstoreError {
            StoreAccess.fail("\(error)")
        } catch let error as JetStreamError {
            StoreAccess.fail("\(error)")
        } catch {
            Output.flush()
            let code = exitCode(for: error)
            // Help, --version and a command's own status (verify's 1) exit as they are.
            if code.isSuccess || error is ExitCode { exit(withError: error) }
            Output.diagnostic(fullMessage(for: error) + "\n")
            Glibc.exit(StoreAccess.errorStatus)
        }
    }
}
