@_spi(Replication) import Feedstore
import Foundation
import Logging

/// The primary's side of forwarded writes: answers requests on the stream's write subject
/// (``WriteMessages/subject(stream:)``) for as long as its shipper ships.
///
/// - Requests that arrive while a batch is written are written together in the next one: one
///   commit, one message in the stream, one transaction on each replica, for many writers. Each
///   request's writes stay atomic, and a refused request is taken out of its batch. A request
///   applied before (its id remembered) gets its first answer.
/// - The reply goes out once the commit is in the stream (the shipper says so), not when it is
///   durable here: an acknowledged write then survives a promotion, and the replica that asked
///   can apply it at once. A request that reads its success from the stream
///   (``WriteMessages/Request/answeredByStream``) gets no reply then: the commit names it.
/// - Refusals are answered at once: the transaction wrote nothing.
final class WriteService: @unchecked Sendable {
    private let store: Store
    private let connection: NATSConnection
    private let options: ForwardedWrites
    private let logger: Logger
    private let metrics: ReplicationMetrics
    private var subscription: NATSCallbackSubscription?

    /// Replies waiting for their commit to reach the stream, and how far the stream holds this
    /// store's commits; under `lock`.
    private let lock = NSLock()
    /// (A reply of nil is not sent once the commit is in the stream: the requester reads it
    /// there. It waits only to be told "not applied" if another store is promoted first.)
    private var waiting: [(sequence: UInt64, inbox: String, reply: [UInt8]?)] = []
    private var shippedThrough: UInt64 = 0
    /// Set when another store was promoted in this one's place: what this one commits from
    /// then on never reaches the stream, so requests are told they were not applied, and why.
    /// (A service released with its shipper answers nothing more: the commits it made may be
    /// shipped by the next shipper, and their requests, sent again, are answered from memory.)
    private var superseded: String?

    init(store: Store, connection options: JetStreamConnection, stream: String, shippedThrough: UInt64, settings: ForwardedWrites,
         metrics: ReplicationMetrics, logger: Logger) throws
    {
        self.store = store
        self.options = settings
        self.metrics = metrics
        self.logger = logger
        self.shippedThrough = shippedThrough
        connection = try NATSConnection(options)
        let subject = WriteMessages.subject(stream: stream)
        subscription = try connection.subscribe(subject: subject) { [weak self] request, _ in self?.handle(request) }
        logger.info("accepting writes", metadata: ["subject": "\(subject)"])
    }

    deinit { subscription?.cancel() }

    /// The stream holds this store's commits through `sequence`: sends the replies that waited
    /// for them.
    func shipped(through sequence: UInt64) {
        let due: [(inbox: String, reply: [UInt8])] = lock.withLock {
            shippedThrough = max(shippedThrough, sequence)
            let due = waiting.compactMap { waiter in waiter.sequence <= sequence ? waiter.reply.map { (waiter.inbox, $0) } : nil }
            waiting.removeAll { $0.sequence <= sequence }
            return due
        }
        for reply in due { send(reply.reply, to: reply.inbox) }
    }

    /// Stops answering because another store was promoted: requests that wait for the stream,
    /// and later ones, are told they were not applied, for `reason`.
    func supersede(reason: String) {
        subscription?.cancel()
        let waited = lock.withLock {
            superseded = superseded ?? reason
            defer { waiting = [] }
            return waiting
        }
        guard let answer = try? WriteMessages.encode(WriteMessages.Reply.notApplied(reason: reason, retry: true)) else { return }
        for reply in waited { send(answer, to: reply.inbox) }
    }

    // MARK: Requests

    private func handle(_ message: NATSRequest) {
        guard let inbox = message.replySubject else { return }
        let request: WriteMessages.Request
        do {
            request = try WriteMessages.decodeRequest(message.data)
        } catch {
            reply(.notApplied(reason: "the request is not a Feedstore write request: \(error)", retry: false), to: inbox, sequence: nil)
            return
        }
        if let reason = lock.withLock({ superseded }) {
            reply(.notApplied(reason: reason, retry: true), to: inbox, sequence: nil)
            return
        }
        let start: Bool = lock.withLock {
            queued.append((request, inbox))
            defer { batchInFlight = true }
            return !batchInFlight
        }
        if start { submitBatch() }
    }

    /// Requests waiting for the next batch, and whether a batch is being written; under `lock`.
    private var queued: [(request: WriteMessages.Request, inbox: String)] = []
    private var batchInFlight = false

    /// At most this many requests share a commit.
    static let requestsPerCommit = 256

    /// A request of a batch refused: the batch is written again without it.
    private struct Refused: Error {
        var index: Int
        var error: any Error
    }

    /// Writes the requests queued so far in one write, so that concurrent requests share one
    /// commit (one message in the stream, one transaction on each replica); then the next batch,
    /// made of the requests that came meanwhile. A request that is refused is answered and the
    /// batch is written again without it.
    private func submitBatch() {
        let batch: [(request: WriteMessages.Request, inbox: String)] = lock.withLock {
            let batch = Array(queued.prefix(Self.requestsPerCommit))
            queued.removeFirst(batch.count)
            if batch.isEmpty { batchInFlight = false }
            return batch
        }
        guard !batch.isEmpty else { return }
        let settings = options
        store.submitWrite({ tx -> (answers: [(sequence: UInt64, repeated: Bool)], committed: Bool) in
            // Each request applied once: remembered from an earlier commit, or earlier in this batch.
            var answers: [(sequence: UInt64?, repeated: Bool)] = []
            var applied: [String: Int] = [:]
            for (i, item) in batch.enumerated() {
                if let known = try tx.appliedRequest(item.request.id) {
                    answers.append((known.sequence, true))
                } else if applied[item.request.id] != nil {
                    answers.append((nil, true))
                } else {
                    do { try tx.apply(item.request.writes) } catch { throw Refused(index: i, error: error) }
                    applied[item.request.id] = i
                    answers.append((nil, false))
                }
            }
            let now = Date()
            let sequence = try tx.commitSequence ?? tx.journalBounds().last
            for id in applied.keys.sorted() {
                try tx.rememberRequest(AppliedRequest(id: id, sequence: sequence, time: now),
                                       keepingAtMost: settings.rememberedRequests, since: now.addingTimeInterval(-settings.rememberedFor.seconds))
            }
            return (answers.map { ($0.sequence ?? sequence, $0.repeated) }, tx.commitSequence != nil)
        }, completion: { [self] result in
            switch result {
            case let .success((answers, committed)):
                metrics.forwardedWrites.increment(by: Int64(answers.count))
                for (item, answer) in zip(batch, answers) {
                    // The stream tells the requester of a commit that names its request.
                    let quiet = item.request.answeredByStream && committed && !answer.repeated
                    reply(.applied(sequence: answer.sequence, repeated: answer.repeated), to: item.inbox, sequence: answer.sequence, quiet: quiet)
                }
            case let .failure(refused as Refused):
                answerFailure(refused.error, to: batch[refused.index])
                var rest = batch
                rest.remove(at: refused.index)
                lock.withLock { queued.insert(contentsOf: rest, at: 0) }
            case let .failure(error):
                for item in batch { answerFailure(error, to: item) }
            }
            submitBatch()
        })
    }

    /// Answers a request its write did not apply: a refusal as a local write would give, or the
    /// primary's own failure.
    private func answerFailure(_ error: any Error, to item: (request: WriteMessages.Request, inbox: String)) {
        if let refusal = WriteMessages.Refusal(error) {
            reply(.refused(refusal), to: item.inbox, sequence: nil)
        } else {
            logger.error("a forwarded write failed", metadata: ["request": "\(item.request.id)", "error": "\(error)"])
            reply(.notApplied(reason: "the primary could not apply it: \(error)", retry: false), to: item.inbox, sequence: nil)
        }
    }

    /// Sends `answer` now, or once the stream holds commit `sequence`; a `quiet` one is not
    /// sent, unless another store is promoted before the commit is in the stream.
    private func reply(_ answer: WriteMessages.Reply, to inbox: String, sequence: UInt64?, quiet: Bool = false) {
        guard var bytes = try? WriteMessages.encode(answer) else { return }
        let sendNow: Bool = lock.withLock {
            guard let sequence, sequence > shippedThrough else { return !quiet }
            if let superseded {
                // This store's commits after the promotion never reach the stream.
                bytes = (try? WriteMessages.encode(WriteMessages.Reply.notApplied(reason: superseded, retry: true))) ?? bytes
                return true
            }
            waiting.append((sequence, inbox, quiet ? nil : bytes))
            return false
        }
        if sendNow { send(bytes, to: inbox) }
    }

    private func send(_ bytes: [UInt8], to inbox: String) {
        do { try connection.publishCore(subject: inbox, data: bytes) } catch {
            // The requester times out and asks again with the same id.
            logger.warning("a reply was not sent", metadata: ["error": "\(error)"])
        }
    }
}
