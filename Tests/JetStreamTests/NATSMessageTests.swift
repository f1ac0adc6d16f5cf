@testable import FeedstoreJetStream
import FeedstoreTestTraits
import Testing

/// The C client frees messages through a collector thread that wakes for each one; this library
/// frees the messages it is done with on its own thread, which relies on the client's layout of a
/// message. The check runs against the installed client, so a client laid out otherwise fails
/// here instead of quietly waking its collector again.
@Suite(.blocking) struct NATSMessageTests {
    @Test func messagesAreFreedOnTheThreadDoneWithThem() {
        #expect(NATSConnection.destroysMessagesAtOnce)
    }
}
