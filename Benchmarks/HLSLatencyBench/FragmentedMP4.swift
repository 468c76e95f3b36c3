import NIOCore

/// The few ISO BMFF boxes a player needs to timestamp fMP4 video samples: from the init
/// segment the video track's id and timescale (`tkhd`, `mdhd`, `hdlr`) and its `trex`
/// defaults; from each fragment the `moof/traf` of that track (`tfhd`, `tfdt`, `trun`).
enum FragmentedMP4 {
    struct VideoTrack: Sendable {
        var trackID: UInt32
        var timescale: UInt32
        var defaultDuration: UInt32 = 0
        var defaultFlags: UInt32 = 0
    }

    /// One video sample, times in milliseconds (rounded from the track timescale).
    struct Sample: Sendable {
        var dts: Int64
        var pts: Int64
        var duration: Int64
        var isKeyframe: Bool
    }

    enum ParseError: Error, CustomStringConvertible {
        case truncated(String)
        case noVideoTrack

        var description: String {
            switch self {
            case .truncated(let box): "truncated or malformed \(box) box"
            case .noVideoTrack: "the init segment has no video track"
            }
        }
    }

    // MARK: Init segment

    static func videoTrack(initSegment buffer: ByteBuffer) throws -> VideoTrack {
        let bytes = Array(buffer.readableBytesView)
        guard let moov = try boxes(bytes, 0..<bytes.count).first(where: { $0.type == "moov" }) else {
            throw ParseError.truncated("moov")
        }
        let moovChildren = try boxes(bytes, moov.body)
        var defaults: [UInt32: (duration: UInt32, flags: UInt32)] = [:]
        for mvex in moovChildren where mvex.type == "mvex" {
            for trex in try boxes(bytes, mvex.body) where trex.type == "trex" {
                var reader = Reader(bytes: bytes, range: trex.body)
                try reader.skip(4)  // version, flags
                let trackID = try reader.u32()
                try reader.skip(4)  // default_sample_description_index
                let duration = try reader.u32()
                try reader.skip(4)  // default_sample_size
                defaults[trackID] = (duration, try reader.u32())
            }
        }
        for trak in moovChildren where trak.type == "trak" {
            let trakChildren = try boxes(bytes, trak.body)
            guard let tkhd = trakChildren.first(where: { $0.type == "tkhd" }),
                  let mdia = trakChildren.first(where: { $0.type == "mdia" }) else { continue }
            var reader = Reader(bytes: bytes, range: tkhd.body)
            let version = try reader.u8()
            try reader.skip(3 + (version == 1 ? 16 : 8))
            let trackID = try reader.u32()
            let mdiaChildren = try boxes(bytes, mdia.body)
            guard let hdlr = mdiaChildren.first(where: { $0.type == "hdlr" }),
                  let mdhd = mdiaChildren.first(where: { $0.type == "mdhd" }) else { continue }
            var handler = Reader(bytes: bytes, range: hdlr.body)
            try handler.skip(8)
            guard try handler.fourCC() == "vide" else { continue }
            var header = Reader(bytes: bytes, range: mdhd.body)
            let mdhdVersion = try header.u8()
            try header.skip(3 + (mdhdVersion == 1 ? 16 : 8))
            let timescale = try header.u32()
            guard timescale > 0 else { throw ParseError.truncated("mdhd") }
            var track = VideoTrack(trackID: trackID, timescale: timescale)
            if let trex = defaults[trackID] {
                track.defaultDuration = trex.duration
                track.defaultFlags = trex.flags
            }
            return track
        }
        throw ParseError.noVideoTrack
    }

    // MARK: Fragments

    /// The video samples of every `moof` in `buffer` (a part, or a whole segment of parts).
    static func videoSamples(in buffer: ByteBuffer, track: VideoTrack) throws -> [Sample] {
        let bytes = Array(buffer.readableBytesView)
        var samples: [Sample] = []
        for moof in try boxes(bytes, 0..<bytes.count) where moof.type == "moof" {
            for traf in try boxes(bytes, moof.body) where traf.type == "traf" {
                try appendSamples(of: traf, in: bytes, track: track, to: &samples)
            }
        }
        return samples
    }

    private static func appendSamples(of traf: Box, in bytes: [UInt8], track: VideoTrack, to samples: inout [Sample]) throws {
        let children = try boxes(bytes, traf.body)
        guard let tfhd = children.first(where: { $0.type == "tfhd" }) else { throw ParseError.truncated("traf") }
        var reader = Reader(bytes: bytes, range: tfhd.body)
        let tfhdFlags = try reader.u32() & 0xFF_FFFF
        guard try reader.u32() == track.trackID else { return }
        if tfhdFlags & 0x01 != 0 { try reader.skip(8) }  // base_data_offset
        if tfhdFlags & 0x02 != 0 { try reader.skip(4) }  // sample_description_index
        var defaultDuration = track.defaultDuration
        var defaultFlags = track.defaultFlags
        if tfhdFlags & 0x08 != 0 { defaultDuration = try reader.u32() }
        if tfhdFlags & 0x10 != 0 { try reader.skip(4) }  // default_sample_size
        if tfhdFlags & 0x20 != 0 { defaultFlags = try reader.u32() }

        guard let tfdt = children.first(where: { $0.type == "tfdt" }) else { throw ParseError.truncated("tfdt") }
        var tfdtReader = Reader(bytes: bytes, range: tfdt.body)
        let tfdtVersion = try tfdtReader.u8()
        try tfdtReader.skip(3)
        var decodeTime = Int64(tfdtVersion == 1 ? try tfdtReader.u64() : UInt64(try tfdtReader.u32()))

        let scale = Int64(track.timescale)
        func milliseconds(_ ticks: Int64) -> Int64 {
            // Rounded to the nearest millisecond (FLV timestamps are whole milliseconds).
            let scaled = ticks * 1000
            return scaled >= 0 ? (scaled + scale / 2) / scale : -((-scaled + scale / 2) / scale)
        }
        for trun in children where trun.type == "trun" {
            var run = Reader(bytes: bytes, range: trun.body)
            let versionAndFlags = try run.u32()
            let version = versionAndFlags >> 24
            let flags = versionAndFlags & 0xFF_FFFF
            let count = try run.u32()
            guard count <= 100_000 else { throw ParseError.truncated("trun") }
            if flags & 0x001 != 0 { try run.skip(4) }  // data_offset
            var firstFlags: UInt32?
            if flags & 0x004 != 0 { firstFlags = try run.u32() }
            for index in 0..<Int(count) {
                let duration = flags & 0x100 != 0 ? try run.u32() : defaultDuration
                if flags & 0x200 != 0 { try run.skip(4) }  // sample_size
                var sampleFlags = flags & 0x400 != 0 ? try run.u32() : defaultFlags
                if index == 0, let firstFlags { sampleFlags = firstFlags }
                var offset: Int64 = 0
                if flags & 0x800 != 0 {
                    let raw = try run.u32()
                    offset = version == 0 ? Int64(raw) : Int64(Int32(bitPattern: raw))
                }
                samples.append(Sample(
                    dts: milliseconds(decodeTime),
                    pts: milliseconds(decodeTime + offset),
                    duration: milliseconds(Int64(duration)),
                    // sample_is_non_sync_sample is bit 16.
                    isKeyframe: sampleFlags & 0x0001_0000 == 0
                ))
                decodeTime += Int64(duration)
            }
        }
    }

    // MARK: Boxes

    struct Box {
        var type: String
        var body: Range<Int>
    }

    /// The boxes in `range`, in order.
    static func boxes(_ bytes: [UInt8], _ range: Range<Int>) throws -> [Box] {
        var result: [Box] = []
        var offset = range.lowerBound
        // Each round advances by at least the 8-byte header.
        while offset + 8 <= range.upperBound {
            var reader = Reader(bytes: bytes, range: offset..<range.upperBound)
            var size = UInt64(try reader.u32())
            let type = try reader.fourCC()
            var header = 8
            if size == 1 {
                size = try reader.u64()
                header = 16
            } else if size == 0 {
                size = UInt64(range.upperBound - offset)
            }
            guard size >= UInt64(header), size <= UInt64(range.upperBound - offset) else {
                throw ParseError.truncated(type)
            }
            result.append(Box(type: type, body: (offset + header)..<(offset + Int(size))))
            offset += Int(size)
        }
        return result
    }

    /// Big-endian reads within a range, throwing past its end.
    struct Reader {
        let bytes: [UInt8]
        var offset: Int
        let end: Int

        init(bytes: [UInt8], range: Range<Int>) {
            self.bytes = bytes
            self.offset = range.lowerBound
            self.end = range.upperBound
        }

        mutating func skip(_ count: Int) throws {
            guard offset + count <= end else { throw ParseError.truncated("box") }
            offset += count
        }

        mutating func u8() throws -> UInt8 {
            guard offset + 1 <= end else { throw ParseError.truncated("box") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func u32() throws -> UInt32 {
            guard offset + 4 <= end else { throw ParseError.truncated("box") }
            defer { offset += 4 }
            return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }

        mutating func u64() throws -> UInt64 {
            guard offset + 8 <= end else { throw ParseError.truncated("box") }
            defer { offset += 8 }
            return bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
        }

        mutating func fourCC() throws -> String {
            guard offset + 4 <= end else { throw ParseError.truncated("box") }
            defer { offset += 4 }
            return String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
        }
    }
}
