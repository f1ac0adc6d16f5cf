import Foundation

/// What the server answered to asynchronous publishes, gathered from the client's thread until
/// the shipper takes it.
final class PublishAcknowledgments: @unchecked Sendable {
    /// The answers since the last ``take()``.
    struct Answers {
        /// Stream sequences of the stored messages, in the order their answers came.
        var streamSequences: [UInt64] = []
        /// How many of them the stream already held (deduplicated by `Nats-Msg-Id`).
        var duplicates = 0
        /// The first refusal: JetStream's error code and text.
        var refusal: (code: Int, reason: String)?
        /// Why a publish found no stream to answer it (JetStream not ready, as after a restart
        /// of the server): not a refusal, the shipper tries again.
        var unavailable: String?
        /// Publishes not yet answered.
        var pending = 0
    }

    private let lock = NSLock()
    private var answers = Answers()

    func sent() { lock.withLock { answers.pending += 1 } }

    func failedToSend() { lock.withLock { answers.pending -= 1 } }

    func acknowledged(streamSequence: UInt64, duplicate: Bool) {
        lock.withLock {
            answers.pending -= 1
            answers.streamSequences.append(streamSequence)
            if duplicate { answers.duplicates += 1 }
        }
    }

    func refused(code: Int, reason: String) {
        lock.withLock {
            answers.pending -= 1
            if answers.refusal == nil { answers.refusal = (code, reason) }
        }
    }

    func unavailable(_ reason: String) {
        lock.withLock {
            answers.pending -= 1
            if answers.unavailable == nil { answers.unavailable = reason }
        }
    }

    /// The answers so far; the next call starts afresh (pending publishes stay counted).
    func take() -> Answers {
        lock.withLock {
            let taken = answers
            answers = Answers(pending: answers.pending)
            return taken
        }
    }
}
