@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The library's threads carry their names for the system, which `top -H`, `perf` and
/// debuggers show (Foundation on Linux keeps a thread's `name` to itself).
@Suite(.blocking) struct NamedThreadTests {
    /// The calling thread's name as the system has it.
    static func systemName() throws -> String {
        try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
    }

    /// A write that finds another running waits for the writer thread, which runs it.
    @Test func aQueuedWriteRunsOnTheThreadNamedFsWriter() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            let running = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            let inline = Thread {
                try? store.write { _ in
                    running.signal()
                    release.wait()
                }
            }
            inline.start()
            running.wait()
            async let name = store.write { _ in try Self.systemName() }
            while store.core.writer.queuedRequests == 0 { try await Task.sleep(for: .milliseconds(1)) }
            release.signal()
            #expect(try await name == "fs writer")
            store.close()
        }
    }

    /// Linux keeps 15 bytes of a name; a longer one is cut there, on a character boundary.
    @Test func aLongNameIsCutToWhatTheSystemKeeps() {
        let names = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        for name in ["a name longer than fifteen bytes", "fifteen bytes é", "thirteen byteé"] {
            NamedThread.start(name) {
                names.withLock { $0.append((try? Self.systemName()) ?? "unreadable") }
                done.signal()
            }
            done.wait()
        }
        #expect(names.current == ["a name longer t", "fifteen bytes ", "thirteen byteé"])
    }
}
