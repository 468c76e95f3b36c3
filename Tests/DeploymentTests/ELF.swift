import Foundation

/// Reads the DT_NEEDED entries of a 64-bit little-endian ELF file (what `readelf -d` lists
/// as NEEDED), so the library check does not depend on binutils.
enum ELFFile {
    static func neededLibraries(of url: URL) throws -> [String] {
        let data = try Data(contentsOf: url, options: .alwaysMapped)
        let bytes = [UInt8](data)
        func integer(_ offset: Int, _ size: Int) throws -> UInt64 {
            guard offset >= 0, offset + size <= bytes.count else { throw DeploymentFailure("\(url.path): ELF offset \(offset) out of range") }
            var value: UInt64 = 0
            for index in (0..<size).reversed() { value = value << 8 | UInt64(bytes[offset + index]) }
            return value
        }
        guard bytes.count > 64, bytes[0..<4] == [0x7F, 0x45, 0x4C, 0x46] else { throw DeploymentFailure("\(url.path) is not an ELF file") }
        guard bytes[4] == 2, bytes[5] == 1 else { throw DeploymentFailure("\(url.path): not a 64-bit little-endian ELF file") }
        let sectionTable = Int(try integer(0x28, 8))
        let sectionSize = Int(try integer(0x3A, 2))
        let sectionCount = Int(try integer(0x3C, 2))
        func section(_ index: Int) throws -> (type: UInt64, offset: Int, size: Int, link: Int) {
            let base = sectionTable + index * sectionSize
            return (try integer(base + 4, 4), Int(try integer(base + 0x18, 8)), Int(try integer(base + 0x20, 8)), Int(try integer(base + 0x28, 4)))
        }
        var names: [String] = []
        for index in 0..<sectionCount {
            let dynamic = try section(index)
            guard dynamic.type == 6 else { continue }  // SHT_DYNAMIC
            let strings = try section(dynamic.link)
            var entry = dynamic.offset
            while entry + 16 <= dynamic.offset + dynamic.size {
                let tag = try integer(entry, 8), value = Int(try integer(entry + 8, 8))
                if tag == 0 { break }  // DT_NULL
                if tag == 1 {  // DT_NEEDED
                    var end = strings.offset + value
                    guard end < bytes.count else { throw DeploymentFailure("\(url.path): bad DT_NEEDED") }
                    while end < bytes.count, bytes[end] != 0 { end += 1 }
                    names.append(String(decoding: bytes[(strings.offset + value)..<end], as: UTF8.self))
                }
                entry += 16
            }
        }
        return names
    }
}
