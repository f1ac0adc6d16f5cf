import Foundation

extension LMDBPageCheck {
    /// How the data file's length compares with the pages a snapshot counts in use.
    ///
    /// LMDB counts pages up to its meta page's last page, but writes only the pages a tree
    /// uses: a page allocated and freed again within one transaction (a "loose" page) goes to
    /// the free list unwritten, and is written when a later commit reuses it. So a healthy file
    /// may end before its last page. It lacks data only when a page that a tree uses (the free
    /// list's own tree included) lies past its end.
    enum FileEnd: Equatable {
        /// The file holds every page up to the last.
        case whole
        /// The file ends before `pages` pages that only the free list names (never written).
        case unwrittenFreePages(Int)
        /// A page in use lies past the end of the file: what, and where.
        case truncated(String)
    }

    /// Decides ``FileEnd`` for `txn`'s snapshot with `pread` alone, never reading past the end
    /// of the file (through the map, that would kill the process). When the file is short,
    /// it walks only the free list's tree: every page past the end must be listed free there.
    /// Nil when commits since `txn` began overwrote its meta page (try again).
    /// - Complexity: O(1) when the file is whole, else O(free list).
    static func fileEnd(_ environment: LMDBEnvironment, in txn: borrowing LMDBTransaction) throws -> FileEnd? {
        let path = environment.path + "/data.mdb"
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return .truncated("data.mdb cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(file) }
        var status = stat()
        guard fstat(file, &status) == 0 else { return .truncated("data.mdb cannot be measured: \(String(cString: strerror(errno)))") }
        let size = Int(status.st_size)
        switch snapshotMeta(file: file, environment: environment, in: txn) {
        case nil: return nil
        case .problem(let problem): return .truncated(problem)
        case .meta(let free, _, let lastPage):
            // A page that only partly lies in the file is missing too.
            let pagesInFile = UInt64(size / environment.pageSize)
            if pagesInFile > lastPage { return .whole }
            let needed = (Int(lastPage) + 1) * environment.pageSize
            var check = LMDBPageCheck(file: file, pageSize: environment.pageSize, lastPage: lastPage, progress: nil)
            check.walk(free, name: "the free list", integerKeys: true)
            if let problem = check.problems.first {
                return .truncated("data.mdb is truncated: it holds \(size) of the \(needed) bytes its pages take, and \(problem)")
            }
            guard let used = (pagesInFile...lastPage).first(where: { !check.seen[Int($0)] }) else {
                return .unwrittenFreePages(Int(lastPage - pagesInFile + 1))
            }
            return .truncated("data.mdb is truncated: it holds \(size) of the \(needed) bytes its pages take, and page \(used), "
                + "which is in use (not free), lies past its end")
        }
    }
}
