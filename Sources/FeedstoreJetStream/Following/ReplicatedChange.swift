@_spi(Replication) import Feedstore

extension WriteTransaction {
    /// Applies one entry of an origin's commit as a replica stores it: `fields` nil deletes the
    /// record; an `exact` record (the envelope's `stored` one) goes in as it is, the origin having
    /// held it to its types; one read from JSON is held to the catalog, keeping the fields the
    /// origin kept.
    @_spi(Benchmarking) public func applyReplicated(entity: String, id: FieldValue, fields: [String: FieldValue]?, exact: Bool) throws {
        guard let fields else {
            _ = try delete(entity: entity, id: id)
            return
        }
        if exact {
            try put(entity: entity, id: id, storedFields: fields)
        } else {
            try put(entity: entity, id: id, fields: fields, keepingUndeclaredFields: true)
        }
    }
}
