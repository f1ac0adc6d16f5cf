import Foundation

/// A NATS Object Store bucket, read and written with plain JetStream messages in the layout every
/// NATS client's Object Store uses (the C client has none), so that `nats object ls`, nats.go or
/// nats-py list and fetch what Feedstore puts there:
///
/// - The bucket is the stream `OBJ_<bucket>`, holding `$O.<bucket>.C.>` and `$O.<bucket>.M.>`,
///   with rollups and direct reads allowed and new messages refused when full.
/// - An object's bytes are messages of at most 512 KiB (clients read any size; the description
///   says which) on `$O.<bucket>.C.<nuid>`, a random id new for each put.
/// - Its description (``ObjectInfo``, JSON) is the one message on
///   `$O.<bucket>.M.<name in base64url>`, published with `Nats-Rollup: sub` after the last chunk,
///   so an object is listed only once it is whole. It carries the size, the chunk count and the
///   digest, `SHA-256=<base64url>` of the bytes.
/// - Deleting purges both subjects.
final class ObjectStoreBucket {
    /// The bucket's name.
    let name: String
    /// The stream holding it.
    var streamName: String { "OBJ_\(name)" }

    private let connection: NATSConnection

    /// The largest chunk: well under the server's default message limit (1 MiB), and large
    /// enough that a snapshot takes few messages.
    static let chunkSize = 512 * 1024
    /// Chunks published before waiting for their acknowledgments: bounds the client's memory.
    private static let chunksInFlight = 64

    /// The bucket `name`, created when `create` is true and it does not exist.
    /// - Throws: ``JetStreamError/serverRefused(_:reason:)`` when it does not exist and `create`
    ///   is false; ``JetStreamError/invalidName(kind:name:reason:)`` when the name is not a
    ///   bucket's (letters, digits, `-` and `_`).
    init(connection: NATSConnection, name: String, create: Bool) throws {
        try JetStreamNames.checkBucket(name)
        self.connection = connection
        self.name = name
        if try connection.streamInfo(streamName) == nil {
            guard create else { throw JetStreamError.serverRefused("reading bucket \(name)", reason: "there is no such bucket") }
            try connection.addObjectStream(streamName, subjects: ["$O.\(name).C.>", "$O.\(name).M.>"])
        }
    }

    private func metaSubject(_ object: String) -> String { "$O.\(name).M.\(Self.base64URL(Array(object.utf8)))" }
    private func chunkSubject(_ nuid: String) -> String { "$O.\(name).C.\(nuid)" }

    /// Stores the bytes read from `descriptor` to its end as the object `object`, replacing an
    /// object of that name.
    /// - Parameter progress: called with the bytes stored so far after each chunk.
    /// - Parameter bytesPerSecond: at most this many bytes are sent per second (nil: as fast as
    ///   the server takes them), so that storing a large object leaves the server and the disk
    ///   to others too.
    func put(_ object: String, from descriptor: Int32, description: String? = nil, headers: [String: [String]] = [:],
             bytesPerSecond: UInt64? = nil, progress: (UInt64) -> Void = { _ in }) throws -> ObjectInfo
    {
        let started = ContinuousClock.now
        let nuid = Self.newNUID()
        let subject = chunkSubject(nuid)
        let hash = SHA256()
        var size: UInt64 = 0
        var chunks: UInt32 = 0
        var buffer = [UInt8](repeating: 0, count: Self.chunkSize)
        do {
            _ = connection.acknowledgments.take()
            while true {
                let count = try Self.readFull(descriptor, into: &buffer)
                guard count > 0 else { break }
                let chunk = Array(buffer[0..<count])
                hash.update(chunk)
                try connection.publishAsync(subject: subject, data: chunk, headers: [:])
                size += UInt64(count)
                chunks += 1
                if chunks % UInt32(Self.chunksInFlight) == 0 { try waitForChunks() }
                progress(size)
                if let bytesPerSecond {
                    // Ahead of the pace: wait until the bytes sent are due.
                    let due = started + .seconds(Double(size) / Double(bytesPerSecond))
                    if due > ContinuousClock.now { Thread.sleep(forTimeInterval: (due - ContinuousClock.now).seconds) }
                }
                if count < Self.chunkSize { break }
            }
            try waitForChunks()
            let info = ObjectInfo(name: object, description: description, headers: headers.isEmpty ? nil : headers,
                                  options: .init(maxChunkSize: Self.chunkSize), bucket: name, nuid: nuid, size: size,
                                  mtime: ChangeEnvelope.timeFormatter.string(from: Date()), chunks: chunks,
                                  digest: "SHA-256=" + Self.base64URL(hash.finish()), deleted: nil)
            let previous = try self.info(object)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            try connection.publish(subject: metaSubject(object), data: Array(try encoder.encode(info)), headers: ["Nats-Rollup": "sub"])
            if let previous, previous.nuid != nuid { try? connection.purge(streamName, subject: chunkSubject(previous.nuid)) }
            return info
        } catch {
            // Chunks without a description are nobody's: remove them.
            try? connection.purge(streamName, subject: subject)
            throw error
        }
    }

    private func waitForChunks() throws {
        let finished = connection.waitForAcknowledgments(timeout: connection.timeout)
        let answers = connection.acknowledgments.take()
        if let refusal = answers.refusal { throw JetStreamError.serverRefused("a chunk of bucket \(name)", reason: refusal.reason) }
        guard finished else { throw JetStreamError.timedOut("acknowledgments of chunks of bucket \(name)") }
    }

    /// The description of `object`, or nil when the bucket holds none (or a deleted one).
    func info(_ object: String) throws -> ObjectInfo? {
        guard let message = try connection.lastMessage(streamName, subject: metaSubject(object)) else { return nil }
        let info = try decodeInfo(message)
        return info.deleted == true ? nil : info
    }

    /// The objects the bucket holds.
    func list() throws -> [ObjectInfo] {
        let subjects = try connection.subjects(of: streamName, matching: "$O.\(name).M.>") ?? [:]
        return try subjects.keys.sorted().compactMap { subject in
            guard let message = try connection.lastMessage(streamName, subject: subject) else { return nil }
            let info = try decodeInfo(message)
            return info.deleted == true ? nil : info
        }
    }

    /// Writes the bytes of `object` to `descriptor`, checking their size, chunk count and digest.
    /// - Parameter progress: called with the bytes written so far after each chunk.
    /// - Throws: ``JetStreamError/badObject(bucket:name:reason:)`` when what arrives is not what
    ///   the description promises (the object was replaced or deleted meanwhile, say).
    func get(_ object: ObjectInfo, into descriptor: Int32, progress: (UInt64) -> Void = { _ in }) throws {
        let hash = SHA256()
        var size: UInt64 = 0
        var chunks: UInt32 = 0
        if object.chunks > 0 {
            let subscription = try connection.subscribe(stream: streamName, subject: chunkSubject(object.nuid), from: 1)
            while chunks < object.chunks {
                guard let message = try subscription.next(timeout: connection.timeout) else {
                    throw JetStreamError.badObject(bucket: name, name: object.name,
                                                   reason: "chunk \(chunks + 1) of \(object.chunks) did not arrive; the object may have been deleted")
                }
                hash.update(message.data)
                try Self.writeFull(descriptor, message.data)
                Self.startWriteback(descriptor, from: size, count: message.data.count)
                size += UInt64(message.data.count)
                chunks += 1
                progress(size)
                if message.pending == 0 { break }
            }
        }
        guard chunks == object.chunks, size == object.size else {
            throw JetStreamError.badObject(bucket: name, name: object.name,
                                           reason: "\(chunks) chunks of \(size) bytes arrived, the description promises \(object.chunks) of \(object.size)")
        }
        let digest = "SHA-256=" + Self.base64URL(hash.finish())
        guard object.digest == nil || Self.sameDigest(object.digest!, digest) else {
            throw JetStreamError.badObject(bucket: name, name: object.name, reason: "its digest is \(digest), the description says \(object.digest!)")
        }
    }

    /// Removes `object`: its chunks, then its description.
    func delete(_ object: ObjectInfo) throws {
        try connection.purge(streamName, subject: chunkSubject(object.nuid))
        try connection.purge(streamName, subject: metaSubject(object.name))
    }

    // MARK: Encoding

    private func decodeInfo(_ message: StreamMessage) throws -> ObjectInfo {
        do { return try JSONDecoder().decode(ObjectInfo.self, from: Data(message.data)) } catch {
            throw JetStreamError.badObject(bucket: name, name: "(the description at stream message \(message.streamSequence))",
                                           reason: "it is not an object description: \(error)")
        }
    }

    /// Base64 with the URL alphabet and padding, as Go's `base64.URLEncoding` writes it.
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }

    /// Whether two digests are equal, padded or not (some clients leave the padding out).
    private static func sameDigest(_ a: String, _ b: String) -> Bool {
        func bare(_ s: String) -> String { s.replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "SHA-256", with: "") }
        return bare(a) == bare(b)
    }

    /// A NATS unique id: 22 characters of base 62.
    static func newNUID() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return String((0..<22).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] })
    }

    // MARK: Files

    /// Reads until `buffer` is full or the file ends; the number of bytes read.
    static func readFull(_ descriptor: Int32, into buffer: inout [UInt8]) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 {
                if errno == EINTR { continue }
                throw JetStreamError.fileFailed(reason: "reading: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            filled += count
        }
        return filled
    }

    /// Starts writing the bytes just written to disk, without waiting: the sync that makes the
    /// whole file durable at the end then finds most of it written, so the disk works while the
    /// rest arrives.
    static func startWriteback(_ descriptor: Int32, from offset: UInt64, count: Int) {
        #if os(Linux)
        _ = posix_fadvise(descriptor, off_t(offset), off_t(count), POSIX_FADV_DONTNEED)
        #endif
    }

    static func writeFull(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw JetStreamError.fileFailed(reason: "writing: \(String(cString: strerror(errno)))")
            }
            written += count
        }
    }
}

/// An object's description in an Object Store bucket, as every NATS client writes it.
struct ObjectInfo: Codable, Equatable {
    struct Options: Codable, Equatable {
        var maxChunkSize: Int?
        enum CodingKeys: String, CodingKey { case maxChunkSize = "max_chunk_size" }
    }

    var name: String
    var description: String?
    /// Headers of the object, as NATS headers: each name with its values.
    var headers: [String: [String]]?
    var options: Options?
    var bucket: String
    var nuid: String
    var size: UInt64
    var mtime: String
    var chunks: UInt32
    var digest: String?
    var deleted: Bool?

    /// The first value of header `name`.
    func header(_ name: String) -> String? { headers?[name]?.first }
}
