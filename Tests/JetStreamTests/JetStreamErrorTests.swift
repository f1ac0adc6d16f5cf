import FeedstoreJetStream
import FeedstoreTestTraits
import Foundation
import Testing

/// JetStream's errors are LocalizedErrors: an alert shows the same one-line message.
@Suite(.blocking) struct JetStreamErrorTests {
    @Test func errorsDescribeThemselves() {
        for error in [JetStreamError.timedOut("publishing commit 7"), .serverUnavailable("nats://127.0.0.1:4222", reason: "connection refused")] {
            #expect((error as any Error).localizedDescription == error.description)
            #expect(!error.description.isEmpty)
        }
    }
}
