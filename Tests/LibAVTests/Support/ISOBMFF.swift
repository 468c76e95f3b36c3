/// Top-level ISO BMFF boxes of a byte string (enough to check segment shapes).
enum ISOBMFF {
    struct Box: Equatable {
        var type: String
        var size: Int
    }

    /// The top-level boxes; nil when a box size does not add up.
    static func topLevelBoxes(_ bytes: [UInt8]) -> [Box]? {
        var boxes: [Box] = []
        var offset = 0
        while offset < bytes.count {
            guard offset + 8 <= bytes.count else { return nil }
            var size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if size == 1 {
                guard offset + 16 <= bytes.count else { return nil }
                size = bytes[(offset + 8)..<(offset + 16)].reduce(0) { $0 << 8 | Int($1) }
            }
            guard size >= 8, offset + size <= bytes.count else { return nil }
            boxes.append(Box(type: type, size: size))
            offset += size
        }
        return boxes
    }
}
