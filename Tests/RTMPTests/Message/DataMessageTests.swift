@testable import AMF0
import NIOCore
import Testing

@testable import RTMP

struct DataMessageTests {
    static let metadataArray: [UInt8] = [0x08] + Wire.u32(2) + Wire.key("width") + Wire.amfNumber(1280)
        + Wire.key("videocodecid") + Wire.amfString("avc1") + Wire.objectEnd

    @Test
    func setDataFrameYieldsOnMetaDataBody() throws {
        let body = Wire.amfString("@setDataFrame") + Wire.amfString("onMetaData") + Self.metadataArray
        let raw = RTMPMessage(typeID: 18, streamID: 1, timestamp: 0, chunkStreamID: 4, payload: ByteBuffer(body))
        let data = try DataMessage(from: raw)
        #expect(data.name == "@setDataFrame")
        #expect(data.metadata?["width"]?.numberValue == 1280)
        let relay = try #require(data.metadataBody())
        #expect(relay.bytes == Wire.amfString("onMetaData") + Self.metadataArray)
        #expect(data.metadataMessage()?.message(streamID: 1).typeID == 18)
    }

    @Test
    func plainOnMetaDataIsRecognised() throws {
        let data = try DataMessage(from: ByteBuffer(Wire.amfString("onMetaData") + Self.metadataArray))
        #expect(data.metadataBody()?.bytes == Wire.amfString("onMetaData") + Self.metadataArray)
    }

    @Test
    func otherDataHasNoMetadata() throws {
        let access = DataMessage.sampleAccess()
        let decoded = try DataMessage(from: access.message())
        #expect(decoded == DataMessage(name: "|RtmpSampleAccess", values: [.boolean(true), .boolean(true)]))
        #expect(decoded.metadata == nil)
        #expect(decoded.metadataBody() == nil)
    }

    @Test
    func amf3DataSkipsFormatByte() throws {
        let raw = RTMPMessage(
            typeID: 15, streamID: 1, timestamp: 0, chunkStreamID: 4,
            payload: ByteBuffer([0x00] + Wire.amfString("onMetaData") + Self.metadataArray)
        )
        #expect(try DataMessage(from: raw).metadata != nil)
    }
}
