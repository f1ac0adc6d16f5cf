import Foundation

extension FieldValue {
    /// The value as compact JSON text with object keys in order (by their UTF-8 bytes):
    /// deterministic output for tools.
    ///
    /// JSON has no dates, UUIDs, bytes or 64-bit integers beyond 2^53, so: dates print as ISO 8601
    /// strings with fractional seconds, UUIDs as their string, bytes as base64, and integers
    /// exactly as written. Non-finite doubles print as strings ("nan", "inf", "-inf").
    public var jsonText: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// ``jsonText`` as UTF-8 bytes.
    public var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        appendJSON(to: &out)
        return out
    }

    /// Appends ``jsonText``'s bytes to `out` (bytes, not a `String`: appending to an array is
    /// several times cheaper, and envelopes and tools write bytes anyway).
    @_spi(Replication) public func appendJSON(to out: inout [UInt8]) {
        switch self {
        case .null: out += "null".utf8
        case let .bool(v): out += (v ? "true" : "false").utf8
        case let .int(v): Self.appendDecimal(v.magnitude, negative: v < 0, to: &out)
        case let .uint(v): Self.appendDecimal(v, negative: false, to: &out)
        case let .double(v):
            if v.isNaN { out += "\"nan\"".utf8 } else if v.isInfinite { out += (v < 0 ? "\"-inf\"" : "\"inf\"").utf8 } else {
                if v == v.rounded() && abs(v) < 1e15 {
                    // An integral value, as "%.1f" prints it (-0.0 keeps its sign), without printf.
                    out += (v == 0 && v.sign == .minus ? "-0.0" : String(Int64(v)) + ".0").utf8
                } else {
                    out += "\(v)".utf8
                }
            }
        case let .date(d): Self.appendJSONDate(d, to: &out)
        case let .string(s): Self.appendJSONString(s, to: &out)
        case let .bytes(b): Self.appendJSONString(Data(b).base64EncodedString(), to: &out)
        case let .uuid(u): Self.appendJSONString(u.uuidString, to: &out)
        case let .array(items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.appendJSON(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let .object(members): Self.appendJSONObject(Self.sortedMembers(members), to: &out)
        }
    }

    /// An object's members in key order (by their UTF-8 bytes), as JSON text and the stored
    /// encoding write them.
    static func sortedMembers(_ members: [String: FieldValue]) -> [(key: String, value: FieldValue)] {
        members.sorted { $0.key.precedesAsKey($1.key) }
    }

    /// Appends the object of `members`, in the order given, as JSON text.
    static func appendJSONObject(_ members: [(key: String, value: FieldValue)], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            appendJSONString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            member.value.appendJSON(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Appends the object of `members` as JSON text to `json` and in its stored encoding
    /// (``storedEncoding``) to `stored`, its members sorted once for both: a shipped record is
    /// written both ways.
    @_spi(Replication) public static func appendObject(_ members: [String: FieldValue], json: inout [UInt8], stored: inout [UInt8]) {
        let sorted = sortedMembers(members)
        appendJSONObject(sorted, to: &json)
        RecordCodec.appendObject(sorted, to: &stored)
    }

    /// Appends `magnitude` in decimal digits, after a minus sign when `negative`, without
    /// making a `String`.
    @_spi(Replication) public static func appendDecimal(_ magnitude: UInt64, negative: Bool, to out: inout [UInt8]) {
        if negative { out.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for UInt64's 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = magnitude
            repeat {
                count += 1
                buffer[buffer.count - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: buffer[(buffer.count - count)...])
        }
    }

    @_spi(Replication) public static func appendJSONString(_ s: String, to out: inout [UInt8]) {
        // Most strings need no escapes: appended whole, not scalar by scalar.
        var text = s
        let plain = text.withUTF8 { bytes in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            return true
        }
        if plain {
            out.append(UInt8(ascii: "\""))
            out += s.utf8
            out.append(UInt8(ascii: "\""))
            return
        }
        out.append(UInt8(ascii: "\""))
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\"".utf8
            case "\\": out += "\\\\".utf8
            case "\n": out += "\\n".utf8
            case "\r": out += "\\r".utf8
            case "\t": out += "\\t".utf8
            case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value).utf8
            default: UTF8.encode(scalar, into: { out.append($0) })
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends `date` as ``isoFormatter`` writes it (`2026-07-26T18:05:33.120Z`), a hundred
    /// times faster: computed directly for the years 1583 to 9999, written by the formatter
    /// otherwise (it counts earlier days in the Julian calendar).
    static func appendJSONDate(_ date: Date, to out: inout [UInt8]) {
        // Milliseconds since 1970, rounded as the formatter rounds them (half up).
        let milliseconds = (date.timeIntervalSince1970 * 1000 + 0.5).rounded(.down)
        guard milliseconds >= -12_212_553_600_000, milliseconds < 253_402_300_800_000 else {
            return appendJSONString(isoFormatter.string(from: date), to: &out)
        }
        let total = Int64(milliseconds)
        let (days, inDay) = total.quotientAndRemainder(dividingBy: 86_400_000)
        let (day, millisecondOfDay) = inDay < 0 ? (days - 1, inDay + 86_400_000) : (days, inDay)
        // Days since 1970 to a civil date (proleptic Gregorian), after H. Hinnant's algorithm.
        let shifted = day + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let dayOfMonth = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let seconds = millisecondOfDay / 1000
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 26) { text in
            func put(_ value: Int64, digits: Int, at offset: Int) {
                var value = value
                for i in stride(from: offset + digits - 1, through: offset, by: -1) {
                    text[i] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            (text[0], text[5], text[8], text[11]) = (UInt8(ascii: "\""), UInt8(ascii: "-"), UInt8(ascii: "-"), UInt8(ascii: "T"))
            (text[14], text[17], text[20]) = (UInt8(ascii: ":"), UInt8(ascii: ":"), UInt8(ascii: "."))
            (text[24], text[25]) = (UInt8(ascii: "Z"), UInt8(ascii: "\""))
            put(year, digits: 4, at: 1)
            put(month, digits: 2, at: 6)
            put(dayOfMonth, digits: 2, at: 9)
            put(seconds / 3600, digits: 2, at: 12)
            put(seconds / 60 % 60, digits: 2, at: 15)
            put(seconds % 60, digits: 2, at: 18)
            put(millisecondOfDay % 1000, digits: 3, at: 21)
            out.append(contentsOf: text)
        }
    }

    /// The date of `text` written as ``appendJSONDate(_:to:)`` writes dates of the years 1583
    /// to 9999 (`2026-07-26T18:05:33.120Z`), read directly; nil for any other text, which the
    /// formatters read. The same date as ``isoFormatter`` reads: whole milliseconds since 1970.
    static func parseJSONDate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            guard b.count == 24, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
                  b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[19] == UInt8(ascii: "."), b[23] == UInt8(ascii: "Z")
            else { return nil }
            func number(_ range: Range<Int>) -> Int64? {
                var value: Int64 = 0
                for i in range {
                    let digit = b[i] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int64(digit)
                }
                return value
            }
            guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
                  let minute = number(14..<16), let second = number(17..<19), let millisecond = number(20..<23),
                  year >= 1583, (1...12).contains(month), hour < 24, minute < 60, second < 60
            else { return nil }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][Int(month - 1)]
            guard (1...Int64(days)).contains(day) else { return nil }
            // A civil date to days since 1970 (proleptic Gregorian), after H. Hinnant's algorithm.
            let y = month <= 2 ? year - 1 : year
            let era = y / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let daysSince1970 = era * 146_097 + dayOfEra - 719_468
            let milliseconds = ((daysSince1970 * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
            return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        }
    }

    /// The date of ISO 8601 text as JSON text holds dates (``jsonText`` writes them with
    /// milliseconds; other writers may leave the fraction out), or nil: the common form read
    /// with arithmetic, others through the formatters.
    @_spi(Replication) public static func date(fromJSONText text: String) -> Date? {
        parseJSONDate(text) ?? isoFormatter.date(from: text) ?? plainISOFormatter.date(from: text)
    }

    /// Reads ISO 8601 without fractional seconds (`2026-07-26T18:05:33Z`).
    nonisolated(unsafe) static let plainISOFormatter = ISO8601DateFormatter()

    nonisolated(unsafe) static let isoFormatter: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }()

    /// Parses JSON text into a value: `true`/`false` become `.bool`, numbers written without
    /// fraction or exponent `.int` (or `.uint` beyond `Int64.max`), other numbers `.double`, so
    /// ``jsonText`` reads back as the same kinds (strings stay strings: a date or UUID string is
    /// converted only where a catalog says what a field holds). Tools use it to read keys and
    /// records given as JSON.
    ///
    /// - Throws: ``FeedstoreError/corruptData(what:reason:)`` when the text is not JSON.
    public init(jsonText: String) throws {
        do {
            self = try JSONReader.value(of: jsonText)
        } catch let FeedstoreError.corruptData(_, reason) {
            let shown = jsonText.count > 200 ? jsonText.prefix(200) + "…" : Substring(jsonText)
            throw FeedstoreError.corruptData(what: "JSON text", reason: "\(shown) is not valid JSON (\(reason))")
        }
    }
}

extension String {
    /// The order of object keys wherever it shows: in stored objects and in JSON text. By UTF-8
    /// bytes, that is by Unicode scalars, not by `<`, which compares canonical equivalents and
    /// orders some pairs of them neither way ("e\u{301}" and "\u{e9}e"), so that sorting by it
    /// depends on the order keys came in.
    func precedesAsKey(_ other: String) -> Bool {
        var (a, b) = (self, other)
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order != 0 ? order < 0 : x.count < y.count
            }
        }
    }
}
