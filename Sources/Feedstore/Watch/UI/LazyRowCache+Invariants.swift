extension LazyRowCache {
    /// What must hold between calls: every cached row lies inside the list, at most
    /// ``maximumRows`` rows are kept, and each in a slot of its own. Tests run it after every
    /// step; the rows themselves are compared with a fresh query there.
    func checkInvariants() -> [String] {
        var problems: [String] = []
        if let outside = slots.keys.first(where: { $0 < 0 || $0 >= count }) { problems.append("a row cached at \(outside), outside 0..<\(count)") }
        if slots.count > maximumRows { problems.append("\(slots.count) rows cached, more than \(maximumRows)") }
        if Set(slots.values).count != slots.count { problems.append("two positions share a row's slot") }
        if rows.count != slots.count { problems.append("\(slots.count - rows.count) positions name an empty slot") }
        return problems
    }
}
