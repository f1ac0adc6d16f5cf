extension LazyRowCache {
    /// What must hold between calls: the sections' starts follow their counts, every cached row
    /// lies inside the list, and at most ``capacity`` rows are kept. Tests run it after every
    /// step; the rows themselves are compared with a fresh query there.
    func checkInvariants() -> [String] {
        var problems: [String] = []
        var total = 0
        for (i, section) in sections.enumerated() {
            if starts[i] != total { problems.append("section \(i) starts at \(starts[i]), after \(total) rows") }
            if section.count < 0 { problems.append("section \(i) counts \(section.count) rows") }
            total += section.count
        }
        if starts.count != sections.count { problems.append("\(starts.count) starts for \(sections.count) sections") }
        if total != count { problems.append("sections hold \(total) rows, the list counts \(count)") }
        if let outside = slots.keys.first(where: { $0 < 0 || $0 >= count }) { problems.append("a row cached at \(outside), outside 0..<\(count)") }
        if slots.count > maximumRows { problems.append("\(slots.count) rows cached, more than \(maximumRows)") }
        if Set(slots.values).count != slots.count { problems.append("two positions share a row's slot") }
        if rows.count != slots.count { problems.append("\(slots.count - rows.count) positions name an empty slot") }
        return problems
    }
}
