@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// File modes, read-only and immutable handles. (Users without write access are tested through
/// storectl in `AccessTests`, since they need another user's process.)
@Suite(.blocking) struct AccessOptionsTests {
    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber).intValue
    }

    func item(_ id: Int64) -> Item { Item(id: id, group: 1, score: 1, name: "n\(id)", flag: false, tag: nil) }

    @Test func filesGetTheirConfiguredModes() throws {
        try withTemporaryDirectory { dir in
            let shared = try Store(path: dir + "/shared", entities: [Item.self], options: {
                var options = StoreOptions(fileMode: 0o640)
                options.lockFileMode = 0o660
                return options
            }())
            shared.close()
            #expect(try mode(dir + "/shared/data.mdb") == 0o640)
            #expect(try mode(dir + "/shared/lock.mdb") == 0o660)
            // By default both are the owner's alone.
            try Store(path: dir + "/private", entities: [Item.self]).close()
            #expect(try mode(dir + "/private/data.mdb") == 0o600)
            #expect(try mode(dir + "/private/lock.mdb") == 0o600)
        }
    }

    @Test func readOnlyAndImmutableHandlesReadAndSayWhyTheyCannotWrite() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            do {
                let store = try Store(path: path, entities: [Item.self])
                defer { store.close() }
                try store.write { tx in for i in 1...20 { try tx.insert(item(Int64(i))) } }
            }
            var options = StoreOptions()
            options.immutable = true
            let immutable = try Store(path: path, entities: [Item.self], options: options)
            #expect(immutable.readOnlyReason == "it was opened immutable")
            #expect(try immutable.read { try $0.count(Item.self) } == 20)
            #expect(try immutable.verify().isEmpty)
            #expect { try immutable.write { tx in try tx.insert(item(21)) } } throws: { error in
                guard case let FeedstoreError.readOnly(errorPath, reason) = error else { return false }
                return errorPath == path && reason == "it was opened immutable"
                    && "\(error)".contains("read-only (it was opened immutable); writes are not allowed")
            }
            // Another handle in this process may not ask for locking or writing the environment lacks.
            #expect { try Store(path: path, options: StoreOptions(readOnly: true)) } throws: { error in
                guard case let FeedstoreError.incompatibleHandle(_, reason) = error else { return false }
                return reason.contains("immutable")
            }
            #expect { try Store(path: path) } throws: { error in
                guard case FeedstoreError.incompatibleHandle = error else { return false }
                return true
            }
            immutable.close()

            let readOnly = try Store(path: path, options: StoreOptions(readOnly: true))
            defer { readOnly.close() }
            #expect(readOnly.readOnlyReason == "it was opened read-only")
            #expect { try readOnly.write { _ in } } throws: { error in
                guard case let FeedstoreError.readOnly(_, reason) = error else { return false }
                return reason == "it was opened read-only"
            }
            #expect(try readOnly.read { try $0.count(Item.self) } == 20)
        }
    }

    @Test func immutableOpensNothingThatIsNotAStore() throws {
        try withTemporaryDirectory { dir in
            var options = StoreOptions()
            options.immutable = true
            #expect { try Store(path: dir + "/missing", options: options) } throws: { error in
                guard case FeedstoreError.notAStore = error else { return false }
                return true
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/missing"))
        }
    }
}
