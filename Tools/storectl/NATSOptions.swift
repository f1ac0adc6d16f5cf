import ArgumentParser
import FeedstoreJetStream

/// Where the JetStream server and stream are. Credentials come from the environment only
/// (NATS_USER and NATS_PASSWORD, NATS_TOKEN, NATS_CREDS, NATS_CA, NATS_CERT, NATS_KEY), never
/// from the command line, where `ps` shows them.
struct NATSOptions: ParsableArguments {
    @Option(name: .customLong("nats"), help: "The NATS server's URL, e.g. nats://127.0.0.1:4222. Credentials come from NATS_USER and NATS_PASSWORD, NATS_TOKEN, NATS_CREDS, NATS_CA, NATS_CERT and NATS_KEY.")
    var url: String

    @Option(help: "The JetStream stream.")
    var stream: String

    @Option(name: .customLong("until-sequence"), help: "Stop once every commit up to this sequence is done (without it, run until stopped).")
    var untilSequence: UInt64?

    var connection: JetStreamConnection { .fromEnvironment(url: url) }
}
