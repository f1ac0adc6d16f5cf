import DemoFeed
import FeedstoreHummingbird
import Foundation
import GRDB
import Hummingbird
import HummingbirdWebSocket

/// The peer of the live benchmark: live windows over WebSocket as a GRDB user builds them. Each
/// `subscribe` frame starts a `ValueObservation` of its window query
/// (`WHERE contactId = ? ORDER BY id DESC LIMIT ?`); each value the observation gives is
/// diffed against the last one sent (`CollectionDifference` of ids) and sent as a batch in the
/// same JSON as Feedstore's (`deletes` `{at, id}`, `inserts` `{at, id, record}`), records
/// through `JSONEncoder`.
enum GRDBLiveRoute {
    struct Subscribe: Decodable {
        var id: String
        var prefix: [UInt64]
        var limit: Int
    }

    static func add(to router: Router<BasicLiveRequestContext>, pool: DatabasePool) {
        router.ws("/live") { _, _ in .upgrade() } onUpgrade: { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for try await message in inbound.messages(maxSize: 1 << 16) {
                    guard case let .text(text) = message, let subscribe = try? JSONDecoder().decode(Subscribe.self, from: Data(text.utf8)),
                          let contact = subscribe.prefix.first else { continue }
                    group.addTask {
                        let query = Message.filter(Column("contactId") == contact).order(Column("id").desc).limit(subscribe.limit)
                        let observation = ValueObservation.tracking { try query.fetchAll($0) }
                        var shown: [Message]?
                        for try await rows in observation.values(in: pool) {
                            guard let frame = try batch(id: subscribe.id, from: shown, to: rows) else { continue }
                            shown = rows
                            try await outbound.writeTextMessage(frame)
                        }
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// The batch from `old` (nil before the first) to `new`, or nil when nothing changed.
    static func batch(id: String, from old: [Message]?, to new: [Message]) throws -> String? {
        let difference = new.map(\.id).difference(from: (old ?? []).map(\.id))
        guard !difference.isEmpty || old == nil else { return nil }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        var deletes: [String] = [], inserts: [String] = []
        for change in difference {
            switch change {
            case let .remove(offset, element, _): deletes.append(#"{"at":[0,\#(offset)],"id":\#(element)}"#)
            case let .insert(offset, element, _):
                let record = String(decoding: try encoder.encode(new[offset]), as: UTF8.self)
                inserts.append(#"{"at":[0,\#(offset)],"id":\#(element),"record":\#(record)}"#)
            }
        }
        return #"{"type":"batch","id":"\#(id)","initial":\#(old == nil),"deletes":[\#(deletes.joined(separator: ","))],"#
            + #""inserts":[\#(inserts.joined(separator: ","))],"moves":[],"updates":[]}"#
    }
}
