import Foundation

/// The write requests a primary applied for its replicas, remembered so that a retried request
/// gets its first answer and is not applied twice. Kept in the meta database, written in the
/// transaction that applies the request, so a request is remembered exactly when its writes
/// are committed:
/// - `request:<id>` → the commit's sequence and the time, in milliseconds (8 bytes each);
/// - `requests.order:<sequence><id>` → nothing, oldest first, for forgetting and for shipping
///   the ids with their commit;
/// - `requests.count` → how many are remembered.
public struct AppliedRequest: Sendable, Hashable {
    /// The request's id.
    public var id: String
    /// The commit that holds the request's writes (the newest commit then, when they changed
    /// nothing).
    public var sequence: UInt64
    /// When the request was applied, to the millisecond.
    public var time: Date

    /// A remembered request.
    public init(id: String, sequence: UInt64, time: Date) {
        self.id = id
        self.sequence = sequence
        self.time = time
    }
}

enum RequestKeys {
    static let byID = Array("request:".utf8)
    static let order = Array("requests.order:".utf8)
    static let count = Array("requests.count".utf8)

    static func key(id: String) -> [UInt8] { byID + Array(id.utf8) }

    static func orderKey(sequence: UInt64, id: String) -> [UInt8] {
        var key = order
        key.appendBigEndian(sequence)
        return key + Array(id.utf8)
    }

    static func milliseconds(_ time: Date) -> UInt64 { UInt64(max(0, (time.timeIntervalSince1970 * 1_000).rounded())) }

    static func decode(id: String, _ bytes: [UInt8]) throws -> AppliedRequest {
        guard bytes.count == 16 else { throw FeedstoreError.corruptData(what: "applied request \(id)", reason: "\(bytes.count) bytes, expected 16") }
        let sequence = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        let milliseconds = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        return AppliedRequest(id: id, sequence: sequence, time: Date(timeIntervalSince1970: Double(milliseconds) / 1_000))
    }
}

extension ReadTransaction {
    /// The request with `id`, if it was applied and is still remembered.
    @_spi(Replication) public func appliedRequest(_ id: String) throws -> AppliedRequest? {
        try access { try $0.get(core.system.meta, key: RequestKeys.key(id: id)) }.map { try RequestKeys.decode(id: id, $0) }
    }

    /// How many applied requests are remembered.
    @_spi(Replication) public func appliedRequestCount() throws -> Int {
        Int(try MetaKey.decodeUInt64(try access { try $0.get(core.system.meta, key: RequestKeys.count) }, what: "requests.count") ?? 0)
    }

    /// What is wrong with the remembered requests, or nothing: each id's entry has its order
    /// entry with the same commit and the other way round, and the count is theirs.
    @_spi(Replication) public func appliedRequestProblems() throws -> [String] {
        var problems: [String] = []
        var byID: [String: UInt64] = [:]
        var ordered: [String: UInt64] = [:]
        try access { txn in
            try txn.withCursor(core.system.meta) { cursor in
                var more = try cursor.seek(atOrAfter: RequestKeys.byID)
                while more, cursor.key.starts(with: RequestKeys.byID) {
                    let id = String(decoding: cursor.key.dropFirst(RequestKeys.byID.count), as: UTF8.self)
                    do { byID[id] = try RequestKeys.decode(id: id, Array(cursor.value)).sequence } catch { problems.append("\(error)") }
                    more = try cursor.next()
                }
                more = try cursor.seek(atOrAfter: RequestKeys.order)
                while more, cursor.key.starts(with: RequestKeys.order) {
                    let rest = cursor.key.dropFirst(RequestKeys.order.count)
                    let id = String(decoding: rest.dropFirst(8), as: UTF8.self)
                    if ordered.updateValue(rest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }, forKey: id) != nil {
                        problems.append("request \(id) has two order entries")
                    }
                    more = try cursor.next()
                }
            }
        }
        for (id, sequence) in byID where ordered[id] != sequence {
            problems.append("request \(id) (commit \(sequence)) has order entry \(ordered[id].map(String.init) ?? "none")")
        }
        for id in ordered.keys where byID[id] == nil { problems.append("order entry of request \(id) has no request entry") }
        let count = try appliedRequestCount()
        if count != byID.count { problems.append("requests.count is \(count), \(byID.count) requests are remembered") }
        return problems
    }

    /// The remembered requests whose writes commits `sequences` hold, in order.
    @_spi(Replication) public func appliedRequests(in sequences: ClosedRange<UInt64>) throws -> [AppliedRequest] {
        var ids: [(UInt64, String)] = []
        let start = RequestKeys.orderKey(sequence: sequences.lowerBound, id: "")
        try access { txn in
            try txn.withCursor(core.system.meta) { cursor in
                var more = try cursor.seek(atOrAfter: start)
                while more, cursor.key.starts(with: RequestKeys.order) {
                    let rest = cursor.key.dropFirst(RequestKeys.order.count)
                    let sequence = rest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
                    guard sequence <= sequences.upperBound else { break }
                    ids.append((sequence, String(decoding: rest.dropFirst(8), as: UTF8.self)))
                    more = try cursor.next()
                }
            }
        }
        return try ids.compactMap { _, id in try appliedRequest(id) }
    }
}

extension WriteTransaction {
    /// Remembers `request` in this transaction, then forgets the oldest remembered requests
    /// beyond `count` or older than `oldest` (a few per call, so that no transaction pays for
    /// many). A request already remembered is left as it is.
    @_spi(Replication) public func rememberRequest(_ request: AppliedRequest, keepingAtMost count: Int, since oldest: Date) throws {
        try access { txn in
            let meta = core.system.meta
            var value: [UInt8] = []
            value.appendBigEndian(request.sequence)
            value.appendBigEndian(RequestKeys.milliseconds(request.time))
            guard try txn.put(meta, key: RequestKeys.key(id: request.id), value: value, noOverwrite: true) else { return }
            _ = try txn.put(meta, key: RequestKeys.orderKey(sequence: request.sequence, id: request.id), value: [])
            var remembered = try MetaKey.decodeUInt64(try txn.get(meta, key: RequestKeys.count), what: "requests.count") ?? 0
            remembered += 1
            let cutoff = RequestKeys.milliseconds(oldest)
            // The oldest entries in commit order; each forgotten one takes its id's entry along.
            var forgotten: [[UInt8]] = []
            try txn.withCursor(meta) { cursor in
                var more = try cursor.seek(atOrAfter: RequestKeys.order)
                while more, forgotten.count < 4, cursor.key.starts(with: RequestKeys.order) {
                    let id = String(decoding: cursor.key.dropFirst(RequestKeys.order.count + 8), as: UTF8.self)
                    let time = try txn.get(meta, key: RequestKeys.key(id: id)).map { try RequestKeys.decode(id: id, $0).time }
                    guard remembered - UInt64(forgotten.count) > UInt64(max(0, count))
                        || time.map({ RequestKeys.milliseconds($0) < cutoff }) ?? true else { break }
                    forgotten.append(Array(cursor.key))
                    more = try cursor.next()
                }
            }
            for key in forgotten {
                _ = try txn.delete(meta, key: key)
                let id = String(decoding: key.dropFirst(RequestKeys.order.count + 8), as: UTF8.self)
                if try txn.delete(meta, key: RequestKeys.key(id: id)) { remembered -= 1 }
            }
            _ = try txn.put(meta, key: RequestKeys.count, value: MetaKey.encode(remembered))
        }
    }
}
