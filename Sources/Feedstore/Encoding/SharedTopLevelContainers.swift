/// Keyed containers of records' top levels, made once per coding-key type and reused for every
/// record decoded through them.
///
/// Swift's `KeyedDecodingContainer` boxes its container in a class, so every object decoded
/// through `Codable` allocates a box and looks up the box's and the container's generic types:
/// about a thousand instructions and one allocation per record, more than reading three of its
/// fields. A top-level container here holds only a pointer to ``record``, which each decode fills
/// with the record at hand, so the one made for a type serves every record after it.
///
/// One decode at a time: its owner (a transaction, used on one thread) decodes records one after
/// another, and a decode that starts while another is under way (``isDecoding``) goes without.
/// As for any ``StoredDecoder``, a container must not be kept past the `init(from:)` it was
/// given to.
final class SharedTopLevelContainers {
    /// The record being decoded, read by every container kept here.
    let record: UnsafeMutablePointer<StoredRecord>
    // Read on every record, so without Swift's run-time exclusivity checks (about 80
    // instructions an access): the owner uses this object on one thread, and no access here
    // overlaps another.
    @exclusivity(unchecked) private var keyTypes: [ObjectIdentifier] = []
    /// The container kept for each of ``keyTypes``, in memory of its own type: read back from an
    /// `Any`, it would be a run-time cast per record.
    @exclusivity(unchecked) private var containers: [UnsafeMutableRawPointer] = []
    private var releases: [(UnsafeMutableRawPointer) -> Void] = []
    @exclusivity(unchecked) private var isDecoding = false

    init() {
        record = .allocate(capacity: 1)
        record.initialize(to: .empty)
    }

    deinit {
        for (container, release) in zip(containers, releases) { release(container) }
        record.deinitialize(count: 1)
        record.deallocate()
    }

    /// Decodes `type` from the top level of `stored`, through the containers kept here.
    func decode<T: Decodable>(_ type: T.Type, from stored: inout StoredRecord) throws -> T {
        guard !isDecoding else { return try StoredRecord.decode(type, from: &stored) }
        isDecoding = true
        stored.sharedContainers = Unmanaged.passUnretained(self)
        record.pointee = stored
        defer {
            // Drops the nested objects the decode opened, and the bytes it may no longer read.
            record.pointee = .empty
            isDecoding = false
        }
        return try StoredDecoder(node: StoredNode(record: record, offset: StoredNode.top), codingPath: []).decodeValue(type)
    }

    /// The container for `Key` at the top level of ``record``, made by `make` the first time.
    func container<Key: CodingKey>(keyedBy type: Key.Type, _ make: () throws -> KeyedDecodingContainer<Key>) rethrows
        -> KeyedDecodingContainer<Key>
    {
        let key = ObjectIdentifier(type)
        for i in keyTypes.indices where keyTypes[i] == key {
            return containers[i].assumingMemoryBound(to: KeyedDecodingContainer<Key>.self).pointee
        }
        let made = try make()
        let kept = UnsafeMutablePointer<KeyedDecodingContainer<Key>>.allocate(capacity: 1)
        kept.initialize(to: made)
        keyTypes.append(key)
        containers.append(UnsafeMutableRawPointer(kept))
        releases.append { raw in
            let kept = raw.assumingMemoryBound(to: KeyedDecodingContainer<Key>.self)
            kept.deinitialize(count: 1)
            kept.deallocate()
        }
        return made
    }
}
