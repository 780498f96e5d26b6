/// The header of a length-prefixed frame, compiled from a protocol's schema: how to read
/// each header field, how long the frame is, and whether a header is plausible.
///
/// Netty's LengthFieldBasedFrameDecoder maps onto it: lengthFieldOffset = the header fields
/// (or `pad N`) before the length field; lengthFieldLength = that field's width (1, 2, 3, 4,
/// 8); lengthAdjustment = `+ N`/`- N` in the expression; initialBytesToStrip = the header,
/// which is never part of the body; maxFrameLength = `max_frame`.
public struct FrameLayout: Sendable {
    public let fields: [HeaderField]
    public let headerSize: Int
    public let length: LengthRule
    public let idField: Int?
    public let maxFrame: Int

    public init(_ s: ProtocolSchema) {
        fields = s.header
        headerSize = s.headerSize
        length = s.length ?? LengthRule(terms: [], countsWholeFrame: true)
        idField = s.idField
        maxFrame = max(s.maxFrame, s.headerSize)
    }

    /// A header field's value as stored (signed values as their bit pattern).
    @inline(__always)
    public func value(_ i: Int, in b: UnsafeRawBufferPointer, at base: Int) -> UInt64? {
        let f = fields[i]
        guard let raw = b.uint(base + f.offset, width: f.width, bigEndian: f.order == .big) else { return nil }
        if f.signed && f.width < 8 {
            let shift = UInt64(64 - f.width * 8)
            return UInt64(bitPattern: Int64(bitPattern: raw << shift) >> Int64(shift))
        }
        return raw
    }

    public enum Check: Equatable, Sendable {
        case ok(frameLength: Int)
        case tooShort(Int64)
        case tooLong(Int64)
        case constantMismatch(field: Int, value: UInt64)
        case needMoreData
    }

    /// Reads the header at `base` and says how long its frame is, or what is wrong with it.
    @inline(__always)
    public func check(_ b: UnsafeRawBufferPointer, at base: Int) -> Check {
        guard b.count - base >= headerSize else { return .needMoreData }
        for (i, f) in fields.enumerated() where f.constant != nil {
            let v = value(i, in: b, at: base)!
            if v != f.constant! { return .constantMismatch(field: i, value: v) }
        }
        var total: Int64 = 0
        for t in length.terms {
            var v: Int64
            if let fi = t.field {
                let raw = value(fi, in: b, at: base)!
                if fields[fi].signed { v = Int64(bitPattern: raw) } else {
                    guard raw <= UInt64(Int64.max / 4) else { return .tooLong(Int64.max) }
                    v = Int64(raw)
                }
            } else {
                v = t.constant
            }
            if t.negative { v = 0 &- v }
            let (sum, overflow) = total.addingReportingOverflow(v)
            if overflow { return .tooLong(Int64.max) }
            total = sum
        }
        if !length.countsWholeFrame {
            let (sum, overflow) = total.addingReportingOverflow(Int64(headerSize))
            if overflow { return .tooLong(Int64.max) }
            total = sum
        }
        if total < Int64(headerSize) { return .tooShort(total) }
        if total > Int64(maxFrame) { return .tooLong(total) }
        return .ok(frameLength: Int(total))
    }

    @inline(__always)
    public func messageID(_ b: UnsafeRawBufferPointer, at base: Int) -> UInt64? {
        guard let i = idField else { return nil }
        return value(i, in: b, at: base)
    }
}
