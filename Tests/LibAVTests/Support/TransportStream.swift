/// Just enough MPEG-TS parsing to check segment shapes: packet PIDs and the PAT.
enum TransportStream {
    static let packetSize = 188

    /// The PID of each 188-byte packet; nil if a packet lacks the 0x47 sync byte.
    static func pids(_ bytes: [UInt8]) -> [Int]? {
        guard bytes.count % packetSize == 0 else { return nil }
        var pids: [Int] = []
        for start in stride(from: 0, to: bytes.count, by: packetSize) {
            guard bytes[start] == 0x47 else { return nil }
            pids.append(Int(bytes[start + 1] & 0x1F) << 8 | Int(bytes[start + 2]))
        }
        return pids
    }

    /// The PMT PIDs listed by the first PAT in `bytes`.
    static func programMapPIDs(_ bytes: [UInt8]) -> [Int] {
        for start in stride(from: 0, to: bytes.count - packetSize + 1, by: packetSize) {
            let pid = Int(bytes[start + 1] & 0x1F) << 8 | Int(bytes[start + 2])
            let payloadUnitStart = bytes[start + 1] & 0x40 != 0
            guard pid == 0, payloadUnitStart else { continue }
            var offset = start + 4
            if bytes[start + 3] & 0x20 != 0 {  // adaptation field
                offset += 1 + Int(bytes[offset])
            }
            offset += 1 + Int(bytes[offset])  // pointer_field
            let sectionLength = Int(bytes[offset + 1] & 0x0F) << 8 | Int(bytes[offset + 2])
            let programsEnd = offset + 3 + sectionLength - 4  // minus CRC
            var pids: [Int] = []
            var entry = offset + 8
            while entry + 4 <= programsEnd {
                let programNumber = Int(bytes[entry]) << 8 | Int(bytes[entry + 1])
                let mapPID = Int(bytes[entry + 2] & 0x1F) << 8 | Int(bytes[entry + 3])
                if programNumber != 0 {
                    pids.append(mapPID)
                }
                entry += 4
            }
            return pids
        }
        return []
    }
}
