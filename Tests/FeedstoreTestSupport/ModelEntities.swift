import Feedstore
import Foundation

/// An entity exercising compound, descending, unique and partial indexes, optional fields and
/// awkward doubles and strings; `fields` is written by hand so the model does not use the code
/// under test to describe records.
public struct Item: Entity {
    public var id: Int64
    public var group: Int64?
    public var score: Double
    public var name: String
    public var flag: Bool
    public var tag: UUID?

    public init(id: Int64, group: Int64?, score: Double, name: String, flag: Bool, tag: UUID?) {
        (self.id, self.group, self.score, self.name, self.flag, self.tag) = (id, group, score, name, flag, tag)
    }

    public static let indexes: [IndexDefinition] = [
        IndexDefinition("byGroupScore", [.ascending("group"), .descending("score")]),
        IndexDefinition("byName", ["name"], unique: true),
        IndexDefinition("flagged", [.ascending("score")], where: .field("flag") == true && .field("group") >= 2),
        IndexDefinition("byTag", [.descending("tag"), .ascending("name")]),
    ]

    public var fields: [String: FieldValue] {
        ["id": .int(id), "group": group.map { .int($0) } ?? .null, "score": .double(score), "name": .string(name),
         "flag": .bool(flag), "tag": tag.map { .uuid($0) } ?? .null]
    }
}

/// A second entity with a string primary key, dates, small integers and arrays.
public struct Note: Entity {
    public var id: String
    public var body: String
    public var priority: Int8
    public var when: Date
    public var labels: [String]

    public init(id: String, body: String, priority: Int8, when: Date, labels: [String]) {
        (self.id, self.body, self.priority, self.when, self.labels) = (id, body, priority, when, labels)
    }

    public static let indexes: [IndexDefinition] = [
        IndexDefinition("byPriority", [.descending("priority"), .ascending("when")]),
        IndexDefinition("byBody", ["body"]),
    ]

    public var fields: [String: FieldValue] {
        ["id": .string(id), "body": .string(body), "priority": .int(Int64(priority)), "when": .date(when),
         "labels": .array(labels.map { .string($0) })]
    }
}
