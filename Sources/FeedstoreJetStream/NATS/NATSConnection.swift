internal import CFeedstoreNATS
import Foundation

/// One connection to a NATS server with its JetStream context: the only place that calls the C
/// client. Used from one thread at a time; acknowledgments of asynchronous publishes arrive on the
/// client's own thread and are gathered by a ``PublishAcknowledgments``.
final class NATSConnection {
    private(set) var connection: OpaquePointer?
    private var jetStream: OpaquePointer?
    let acknowledgments = PublishAcknowledgments()
    /// How long a request to the server (stream info, a message, a publish's acknowledgment)
    /// may take.
    let timeout: Duration

    init(_ options: JetStreamConnection) throws {
        try options.checkURL()
        timeout = options.timeout
        var natsOptions: OpaquePointer?
        try check(natsOptions_Create(&natsOptions), "creating connection options")
        defer { natsOptions_Destroy(natsOptions) }
        try check(natsOptions_SetURL(natsOptions, options.url), "setting the server URL")
        try check(natsOptions_SetTimeout(natsOptions, options.timeout.milliseconds), "setting the timeout")
        // A shipper or follower that loses its server reconnects for as long as it runs.
        try check(natsOptions_SetMaxReconnect(natsOptions, -1), "setting reconnection")
        try check(natsOptions_SetReconnectWait(natsOptions, 100), "setting reconnection")
        // Each publish goes out at once rather than when the client's flusher next runs: a
        // commit reaches the stream without waiting for it.
        try check(natsOptions_SetSendAsap(natsOptions, true), "setting send-asap")
        if let user = options.user {
            try check(natsOptions_SetUserInfo(natsOptions, user, options.password ?? ""), "setting the user")
        }
        if let token = options.token { try check(natsOptions_SetToken(natsOptions, token), "setting the token") }
        if let file = options.credentialsFile {
            try check(natsOptions_SetUserCredentialsFromFiles(natsOptions, file, nil), "reading the credentials file")
        }
        if let file = options.trustedCertificates {
            try check(natsOptions_SetSecure(natsOptions, true), "enabling TLS")
            try check(natsOptions_LoadCATrustedCertificates(natsOptions, file), "reading the CA certificates")
        }
        if let certificate = options.clientCertificate, let key = options.clientKey {
            try check(natsOptions_LoadCertificatesChain(natsOptions, certificate, key), "reading the client certificate")
        }
        let status = natsConnection_Connect(&connection, natsOptions)
        guard status == NATS_OK else {
            if Self.isUnavailable(status) { throw JetStreamError.serverUnavailable("connecting to \(options.redactedURL)", reason: Self.describe(status)) }
            throw JetStreamError.connectionFailed(url: options.redactedURL, reason: Self.describe(status))
        }
        var jsOptions = jsOptions()
        jsOptions_Init(&jsOptions)
        jsOptions.Wait = options.timeout.milliseconds
        jsOptions.PublishAsync.MaxPending = 4_096
        jsOptions.PublishAsync.AckHandler = acknowledgmentHandler
        jsOptions.PublishAsync.AckHandlerClosure = Unmanaged.passUnretained(acknowledgments).toOpaque()
        try check(natsConnection_JetStream(&jetStream, connection, &jsOptions), "opening JetStream")
    }

    deinit {
        jsCtx_Destroy(jetStream)
        natsConnection_Destroy(connection)
    }

    // MARK: Streams

    /// The stream's subjects and last sequence, or nil when there is no such stream.
    func streamInfo(_ name: String) throws -> (subjects: [String], lastSequence: UInt64, firstSequence: UInt64)? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
        if status == NATS_NOT_FOUND || code == JSStreamNotFoundErr { return nil }
        try check(status, "reading stream \(name)", code: code)
        defer { jsStreamInfo_Destroy(info) }
        let config = info!.pointee.Config!.pointee
        let subjects = (0..<Int(config.SubjectsLen)).map { String(cString: config.Subjects[$0]!) }
        return (subjects, info!.pointee.State.LastSeq, info!.pointee.State.FirstSeq)
    }

    /// Creates a stream on disk holding `subject`, deduplicating published ids over `window`.
    func addStream(_ name: String, subject: String, duplicateWindow window: Duration) throws {
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = name.withCString { cName in
            subject.withCString { cSubject in
                var subjects: [UnsafePointer<CChar>?] = [cSubject]
                return subjects.withUnsafeMutableBufferPointer { list in
                    config.Name = cName
                    config.Subjects = list.baseAddress
                    config.SubjectsLen = 1
                    config.Storage = js_FileStorage
                    config.Duplicates = window.nanoseconds
                    return js_AddStream(&info, jetStream, &config, nil, &code)
                }
            }
        }
        if status != NATS_OK, code == JSStreamSubjectOverlapErr, case let .serverRefused(what, reason) = Self.error(status, "creating stream \(name)", code: code) {
            // Which stream has the subject already: the one to ship to, most likely.
            let holders = (try? streamNames(holding: subject)) ?? []
            throw JetStreamError.serverRefused(what, reason: reason + (holders.isEmpty ? "" : ": stream \(holders.joined(separator: ", ")) carries subject \(subject)"))
        }
        try check(status, "creating stream \(name)", code: code)
        jsStreamInfo_Destroy(info)
    }

    /// The streams whose subjects take `subject`.
    func streamNames(holding subject: String) throws -> [String] {
        var list: UnsafeMutablePointer<jsStreamNamesList>?
        var code = jsErrCode(0)
        let status = Self.withSubjectsFilter(subject) { js_StreamNames(&list, jetStream, &$0, &code) }
        if status == NATS_NOT_FOUND { return [] }
        try check(status, "listing the streams of subject \(subject)", code: code)
        defer { jsStreamNamesList_Destroy(list) }
        guard let list else { return [] }
        return (0..<Int(list.pointee.Count)).compactMap { list.pointee.List[$0].map { String(cString: $0) } }
    }

    /// Calls `call` with JetStream options that filter by subject `filter` (the streams that
    /// hold it, or a stream's subjects that match it).
    private static func withSubjectsFilter(_ filter: String, _ call: (inout jsOptions) -> natsStatus) -> natsStatus {
        var options = jsOptions()
        jsOptions_Init(&options)
        return filter.withCString { cFilter in
            options.Stream.Info.SubjectsFilter = cFilter
            return call(&options)
        }
    }

    /// Creates a stream laid out as a NATS Object Store bucket holds its objects: on disk,
    /// holding `subjects`, refusing new messages rather than dropping old ones when full, and
    /// allowing rollups (a meta message replaces the one before it) and direct reads.
    func addObjectStream(_ name: String, subjects: [String]) throws {
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let names = subjects.map { strdup($0) }
        defer { names.forEach { free($0) } }
        var list = names.map { UnsafePointer<CChar>($0) }
        let status = name.withCString { cName in
            list.withUnsafeMutableBufferPointer { list in
                config.Name = cName
                config.Subjects = list.baseAddress
                config.SubjectsLen = Int32(list.count)
                config.Storage = js_FileStorage
                config.Discard = js_DiscardNew
                config.AllowRollup = true
                config.AllowDirect = true
                return js_AddStream(&info, jetStream, &config, nil, &code)
            }
        }
        try check(status, "creating stream \(name)", code: code)
        jsStreamInfo_Destroy(info)
    }

    /// The subjects of a stream that match `filter`, with how many messages each holds; nil when
    /// there is no such stream.
    func subjects(of stream: String, matching filter: String) throws -> [String: UInt64]? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = Self.withSubjectsFilter(filter) { js_GetStreamInfo(&info, jetStream, stream, &$0, &code) }
        if status == NATS_NOT_FOUND || code == JSStreamNotFoundErr { return nil }
        try check(status, "reading stream \(stream)", code: code)
        defer { jsStreamInfo_Destroy(info) }
        guard let found = info!.pointee.State.Subjects else { return [:] }
        var subjects: [String: UInt64] = [:]
        for index in 0..<Int(found.pointee.Count) {
            let entry = found.pointee.List[index]
            subjects[String(cString: entry.Subject)] = entry.Msgs
        }
        return subjects
    }

    /// The last message of a stream on `subject`, or nil when the stream holds none there.
    func lastMessage(_ stream: String, subject: String) throws -> StreamMessage? {
        var message: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_GetLastMsg(&message, jetStream, stream, subject, nil, &code)
        if status == NATS_NOT_FOUND || code == JSNoMessageFoundErr { return nil }
        try check(status, "reading the last message on \(subject) of stream \(stream)", code: code)
        defer { NATSConnection.destroy(message) }
        return StreamMessage(streamSequence: natsMsg_GetSequence(message), id: Self.header(message, "Nats-Msg-Id"), data: Self.data(message))
    }

    /// Removes a stream's messages before `sequence`, as its limits would.
    func purge(_ stream: String, before sequence: UInt64) throws {
        var options = jsOptions()
        jsOptions_Init(&options)
        options.Stream.Purge.Sequence = sequence
        var code = jsErrCode(0)
        try check(js_PurgeStream(jetStream, stream, &options, &code), "purging stream \(stream) before \(sequence)", code: code)
    }

    /// Removes every message of a stream on `subject`.
    func purge(_ stream: String, subject: String) throws {
        var options = jsOptions()
        jsOptions_Init(&options)
        var code = jsErrCode(0)
        let status = subject.withCString { cSubject in
            options.Stream.Purge.Subject = cSubject
            return js_PurgeStream(jetStream, stream, &options, &code)
        }
        try check(status, "purging \(subject) from stream \(stream)", code: code)
    }

    /// The message at `sequence` of a stream: its data and `Nats-Msg-Id`; nil when the stream
    /// holds none there (never written, or dropped by its retention).
    func message(_ stream: String, at sequence: UInt64) throws -> StreamMessage? {
        var message: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_GetMsg(&message, jetStream, stream, sequence, nil, &code)
        if status == NATS_NOT_FOUND || code == JSNoMessageFoundErr { return nil }
        try check(status, "reading message \(sequence) of stream \(stream)", code: code)
        defer { NATSConnection.destroy(message) }
        return StreamMessage(streamSequence: sequence, id: Self.header(message, "Nats-Msg-Id"), data: Self.data(message))
    }

    // MARK: Publishing

    /// Publishes without waiting for the acknowledgment, which ``acknowledgments`` collects, with
    /// `headers` (`Nats-Msg-Id`, `Nats-Expected-Last-Sequence`, `Nats-Rollup` …).
    func publishAsync(subject: String, data: [UInt8], headers: KeyValuePairs<String, String>) throws {
        let message = try makeMessage(subject: subject, data: data, headers: headers)
        acknowledgments.sent()
        var pointer: OpaquePointer? = message
        let status = js_PublishMsgAsync(jetStream, &pointer, nil)
        if status != NATS_OK {
            NATSConnection.destroy(pointer)
            acknowledgments.failedToSend()
            try check(status, "publishing")
        }
    }

    /// Publishes and waits for the acknowledgment.
    /// - Returns: the message's sequence in its stream, or nil when its headers named an expected
    ///   last sequence (`Nats-Expected-Last-Sequence`) that the stream's is not.
    @discardableResult
    func publish(subject: String, data: [UInt8], headers: KeyValuePairs<String, String>) throws -> UInt64? {
        let message = try makeMessage(subject: subject, data: data, headers: headers)
        defer { NATSConnection.destroy(message) }
        var acknowledgment: UnsafeMutablePointer<jsPubAck>?
        var code = jsErrCode(0)
        let status = js_PublishMsg(&acknowledgment, jetStream, message, nil, &code)
        if code == JSStreamWrongLastSequenceErr { return nil }
        try check(status, "publishing on \(subject)", code: code)
        defer { jsPubAck_Destroy(acknowledgment) }
        return acknowledgment!.pointee.Sequence
    }

    private func makeMessage(subject: String, data: [UInt8], headers: KeyValuePairs<String, String>) throws -> OpaquePointer? {
        var message: OpaquePointer?
        try check(data.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { natsMsg_Create(&message, subject, nil, $0.baseAddress, Int32(bytes.count)) }
        }, "making a message")
        for (name, value) in headers {
            let status = natsMsgHeader_Set(message, name, value)
            if status != NATS_OK {
                NATSConnection.destroy(message)
                try check(status, "setting header \(name)")
            }
        }
        return message
    }

    /// Waits until every asynchronous publish is acknowledged (or refused); false on timeout.
    func waitForAcknowledgments(timeout: Duration) -> Bool {
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = timeout.milliseconds
        return js_PublishAsyncComplete(jetStream, &options) == NATS_OK
    }

    // MARK: Reading in order

    /// A subscription that delivers a stream's messages in order from `start`.
    func subscribe(stream: String, subject: String, from start: UInt64) throws -> OrderedSubscription {
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Ordered = true
        options.Config.DeliverPolicy = js_DeliverByStartSequence
        options.Config.OptStartSeq = start
        var subscription: OpaquePointer?
        var code = jsErrCode(0)
        let status = stream.withCString { cStream in
            options.Stream = cStream
            return js_SubscribeSync(&subscription, jetStream, subject, nil, &options, &code)
        }
        try check(status, "subscribing to stream \(stream)", code: code)
        return OrderedSubscription(subscription: subscription)
    }

    // MARK: Helpers

    static func header(_ message: OpaquePointer?, _ name: String) -> String? {
        var value: UnsafePointer<CChar>?
        guard natsMsgHeader_Get(message, name, &value) == NATS_OK, let value else { return nil }
        return String(cString: value)
    }

    /// Frees a message on this thread rather than through the client's collector thread, which
    /// would wake for each message (`feedstore_natsMsg_DestroyNow` in the module's shim).
    static func destroy(_ message: OpaquePointer?) {
        _ = feedstore_natsMsg_DestroyNow(message)
    }

    /// Whether messages are freed at once: the client lays them out as the shim expects.
    static var destroysMessagesAtOnce: Bool {
        var message: OpaquePointer?
        guard natsMsg_Create(&message, "feedstore.check", nil, "x", 1) == NATS_OK else { return false }
        return feedstore_natsMsg_DestroyNow(message)
    }

    static func data(_ message: OpaquePointer?) -> [UInt8] {
        let count = Int(natsMsg_GetDataLength(message))
        guard count > 0, let data = natsMsg_GetData(message) else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }

    static func describe(_ status: natsStatus) -> String { String(cString: natsStatus_GetText(status)) }

    /// Statuses that say the server cannot be reached now, rather than that it refused.
    static func isUnavailable(_ status: natsStatus) -> Bool {
        [NATS_NO_SERVER, NATS_IO_ERROR, NATS_CONNECTION_CLOSED, NATS_CONNECTION_DISCONNECTED, NATS_STALE_CONNECTION,
         NATS_NOT_YET_CONNECTED, NATS_NO_RESPONDERS].contains(status)
    }

    /// The error for a status other than NATS_OK.
    static func error(_ status: natsStatus, _ what: String, code: jsErrCode = jsErrCode(0)) -> JetStreamError {
        if status == NATS_TIMEOUT { return .timedOut(what) }
        if isUnavailable(status) { return .serverUnavailable(what, reason: describe(status)) }
        return .serverRefused(what, reason: refusal(status) + (code.rawValue != 0 ? " (JetStream error \(code.rawValue))" : ""))
    }

    /// Why a call failed with `status`: the server's own words, which the client keeps as this
    /// thread's last error for a JetStream API call that the server refused ("subjects overlap
    /// with an existing stream"), else the status's text ("Error"). The caller has made no other
    /// call of the client since the one that failed.
    private static func refusal(_ status: natsStatus) -> String {
        var lastStatus = NATS_OK
        if let text = nats_GetLastError(&lastStatus), lastStatus == status {
            var said = Substring(String(cString: text))
            // Without the client's source location: "(jsm.c:1033): subjects overlap …".
            if said.hasPrefix("("), let end = said.range(of: "): ") { said = said[end.upperBound...] }
            if !said.isEmpty { return String(said) }
        }
        return describe(status)
    }

    private func check(_ status: natsStatus, _ what: String, code: jsErrCode = jsErrCode(0)) throws {
        guard status != NATS_OK else { return }
        throw Self.error(status, what, code: code)
    }
}

/// A message read back from a stream.
struct StreamMessage {
    var streamSequence: UInt64
    var id: String?
    var data: [UInt8]
    /// How many messages the subscription has yet to deliver after this one (nil when read by
    /// sequence).
    var pending: UInt64? = nil
}

/// An ordered consumer of a stream (the client recreates it past gaps and restarts).
final class OrderedSubscription {
    private let subscription: OpaquePointer?

    init(subscription: OpaquePointer?) { self.subscription = subscription }

    deinit {
        natsSubscription_Unsubscribe(subscription)
        natsSubscription_Destroy(subscription)
    }

    /// The next message, or nil when none came within `timeout`.
    func next(timeout: Duration) throws -> StreamMessage? {
        var message: OpaquePointer?
        let status = natsSubscription_NextMsg(&message, subscription, timeout.milliseconds)
        if status == NATS_TIMEOUT { return nil }
        guard status == NATS_OK else { throw NATSConnection.error(status, "reading the stream") }
        defer { NATSConnection.destroy(message) }
        var metadata: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else {
            throw JetStreamError.serverRefused("reading the stream", reason: "a message without JetStream metadata")
        }
        defer { jsMsgMetaData_Destroy(metadata) }
        return StreamMessage(streamSequence: metadata.pointee.Sequence.Stream, id: NATSConnection.header(message, "Nats-Msg-Id"),
                             data: NATSConnection.data(message), pending: metadata.pointee.NumPending)
    }
}

/// Called by the C client, on its thread, for each acknowledged or refused asynchronous publish.
private let acknowledgmentHandler: jsPubAckHandler = { _, message, acknowledgment, failure, closure in
    let acknowledgments = Unmanaged<PublishAcknowledgments>.fromOpaque(closure!).takeUnretainedValue()
    if let acknowledgment {
        acknowledgments.acknowledged(streamSequence: acknowledgment.pointee.Sequence, duplicate: acknowledgment.pointee.Duplicate)
    } else if let failure {
        let text = failure.pointee.ErrText.map { String(cString: $0) } ?? NATSConnection.describe(failure.pointee.Err)
        if NATSConnection.isUnavailable(failure.pointee.Err) || failure.pointee.Err == NATS_TIMEOUT {
            acknowledgments.unavailable(text)
        } else {
            acknowledgments.refused(code: Int(failure.pointee.ErrCode.rawValue), reason: text)
        }
    }
    NATSConnection.destroy(message)
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000 }
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
