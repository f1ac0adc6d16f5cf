internal import CFeedstoreNATS
import Foundation

/// A message of a callback subscription: a request and where its answer goes, or an answer.
struct NATSRequest: Sendable {
    /// The subject it came on.
    var subject: String
    var data: [UInt8]
    /// The requester's inbox (nil when the sender expects no answer).
    var replySubject: String?
}

extension NATSConnection {
    /// Publishes `data` on `subject` (core NATS, no JetStream acknowledgment); the C client may
    /// be called so from any thread.
    func publishCore(subject: String, data: [UInt8]) throws {
        let status = data.withUnsafeBytes { natsConnection_Publish(connection, subject, $0.baseAddress, Int32(data.count)) }
        guard status == NATS_OK else { throw Self.error(status, "publishing on \(subject)") }
    }

    /// Publishes a request for `data` on `subject`, with `reply` as the inbox for its answer.
    func publishRequest(subject: String, reply: String, data: [UInt8]) throws {
        let status = data.withUnsafeBytes { natsConnection_PublishRequest(connection, subject, reply, $0.baseAddress, Int32(data.count)) }
        guard status == NATS_OK else { throw Self.error(status, "sending a request on \(subject)") }
    }

    /// Calls `handler` on the client's delivery thread for each message on `subject`, until the
    /// returned subscription is cancelled or released.
    func subscribe(subject: String, _ handler: @escaping @Sendable (NATSRequest, _ noResponders: Bool) -> Void) throws -> NATSCallbackSubscription {
        let box = NATSCallbackSubscription.Handler(handler)
        // Held by the C client until its last delivery has returned (the completion callback).
        let closure = Unmanaged.passRetained(box).toOpaque()
        var subscription: OpaquePointer?
        let status = natsConnection_Subscribe(&subscription, connection, subject, callbackHandler, closure)
        guard status == NATS_OK else {
            Unmanaged<NATSCallbackSubscription.Handler>.fromOpaque(closure).release()
            throw Self.error(status, "subscribing to \(subject)")
        }
        natsSubscription_SetOnCompleteCB(subscription, releaseHandler, closure)
        // Requests may come in bursts (many writers at once): no limit but memory.
        natsSubscription_SetPendingLimits(subscription, -1, -1)
        // The subject is known to the server once this returns, so no request sent after it is lost.
        let flushed = natsConnection_Flush(connection)
        guard flushed == NATS_OK else {
            natsSubscription_Unsubscribe(subscription)
            natsSubscription_Destroy(subscription)
            throw Self.error(flushed, "subscribing to \(subject)")
        }
        return NATSCallbackSubscription(subscription: subscription, handler: box)
    }

    /// A subject no one else uses, for answers to this connection's requests.
    static func newInbox() -> String {
        var inbox: UnsafeMutablePointer<natsInbox>?
        guard natsInbox_Create(&inbox) == NATS_OK, let inbox else { return "_INBOX.\(UUID().uuidString.replacingOccurrences(of: "-", with: ""))" }
        defer { natsInbox_Destroy(inbox) }
        return String(cString: UnsafeRawPointer(inbox).assumingMemoryBound(to: CChar.self))
    }
}

/// A subscription whose messages go to a handler; unsubscribed when cancelled or released.
final class NATSCallbackSubscription: @unchecked Sendable {
    final class Handler: @unchecked Sendable {
        private let lock = NSLock()
        private var call: (@Sendable (NATSRequest, Bool) -> Void)?
        init(_ call: @escaping @Sendable (NATSRequest, Bool) -> Void) { self.call = call }
        func deliver(_ request: NATSRequest, noResponders: Bool) { lock.withLock { call }?(request, noResponders) }
        func stop() { lock.withLock { call = nil } }
    }

    private let lock = NSLock()
    private var subscription: OpaquePointer?
    private let handler: Handler

    init(subscription: OpaquePointer?, handler: Handler) {
        self.subscription = subscription
        self.handler = handler
    }

    /// Stops the deliveries: once this returns, the handler is not called again (a delivery
    /// already running finishes).
    func cancel() {
        lock.withLock {
            guard let subscription else { return }
            handler.stop()
            natsSubscription_Unsubscribe(subscription)
            natsSubscription_Destroy(subscription)
            self.subscription = nil
        }
    }

    deinit { cancel() }
}

/// Called by the C client, on its delivery thread, for each message of a callback subscription.
private let callbackHandler: natsMsgHandler = { _, _, message, closure in
    let handler = Unmanaged<NATSCallbackSubscription.Handler>.fromOpaque(closure!).takeUnretainedValue()
    let reply = natsMsg_GetReply(message).map { String(cString: $0) }
    let request = NATSRequest(subject: String(cString: natsMsg_GetSubject(message)), data: NATSConnection.data(message), replySubject: reply)
    let noResponders = natsMsg_IsNoResponders(message)
    NATSConnection.destroy(message)
    handler.deliver(request, noResponders: noResponders)
}

/// Called by the C client once a callback subscription's last delivery has returned.
private let releaseHandler: natsOnCompleteCB = { closure in
    Unmanaged<NATSCallbackSubscription.Handler>.fromOpaque(closure!).release()
}
