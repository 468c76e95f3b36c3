import Media
import Testing

@testable import LibAV

@Suite struct AVErrorTests {
    /// AVERROR_EOF is FFERRTAG('E','O','F',' ') = -0x20464F45.
    static let endOfFile: Int32 = -0x2046_4F45

    @Test func descriptionNamesTheCallAndRendersFFmpegText() {
        let error = AVError.call(operation: "av_read_frame", code: Self.endOfFile)
        #expect(error.code == Self.endOfFile)
        #expect(error.description == "av_read_frame failed: End of file (\(Self.endOfFile))")
    }

    @Test func errnoCodesRenderAsStrerror() {
        // AVERROR(ENOENT) is -ENOENT = -2 on Linux and Darwin.
        #expect(AVError.call(operation: "avio_open", code: -2).description.contains("No such file or directory"))
    }

    @Test func unknownCodesStillRender() {
        #expect(AVError.call(operation: "x", code: -123_456_789).description.contains("-123456789"))
    }

    @Test func swiftSideErrorsReportEINVAL() {
        // AVERROR(EINVAL) is -22.
        #expect(AVError.trackNotConfigured(.video).code == -22)
        #expect(AVError.noTracks != AVError.trackNotConfigured(.audio))
    }
}
