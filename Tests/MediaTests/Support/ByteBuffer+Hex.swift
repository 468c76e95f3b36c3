import NIOCore

extension ByteBuffer {
    /// Bytes from a hex string; whitespace is ignored. Test vectors only: a malformed
    /// literal is a bug in the test, so it yields an empty buffer that the test then fails on.
    init(hex: String) {
        let digits = hex.unicodeScalars.filter { !$0.properties.isWhitespace }.map { Character($0) }
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < digits.count {
            guard let byte = UInt8(String(digits[index...index + 1]), radix: 16) else {
                bytes = []
                break
            }
            bytes.append(byte)
            index += 2
        }
        self.init(bytes: digits.count % 2 == 0 ? bytes : [])
    }

    /// The readable bytes as lowercase hex, for readable failure messages.
    var hexString: String {
        readableBytesView.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The buffer with its first `count` readable bytes skipped.
    func dropping(_ count: Int) -> ByteBuffer {
        getSlice(at: readerIndex + count, length: readableBytes - count) ?? ByteBuffer()
    }
}
