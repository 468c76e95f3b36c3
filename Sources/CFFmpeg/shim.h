// FFmpeg's libraries (libavformat, libavcodec, libavutil) for Swift.
//
// The headers are imported as they are. What Swift's Clang importer cannot see —
// function-like macros and macros whose expansion is not a plain literal — is offered
// here as `static inline` functions, each with the reason it exists.
#ifndef ESTUARY_CFFMPEG_SHIM_H
#define ESTUARY_CFFMPEG_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/mathematics.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/rational.h>
#include <libavutil/time.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

/// `AVERROR(EAGAIN)`: AVERROR is a function-like macro (negates a POSIX errno on
/// platforms where errno values are positive), which Swift does not import.
static inline int cffmpeg_averror_eagain(void) { return AVERROR(EAGAIN); }

/// `AVERROR(ENOMEM)`: same reason as `cffmpeg_averror_eagain`; the custom AVIO write
/// callback returns it when the Swift buffer cannot grow.
static inline int cffmpeg_averror_enomem(void) { return AVERROR(ENOMEM); }

/// `AVERROR(EINVAL)`: same reason; used for errors detected on the Swift side that are
/// reported with FFmpeg's own vocabulary.
static inline int cffmpeg_averror_einval(void) { return AVERROR(EINVAL); }

/// `AVERROR(ENOSPC)`: same reason; the in-memory AVIO output refuses to grow past its
/// configured bound with it.
static inline int cffmpeg_averror_enospc(void) { return AVERROR(ENOSPC); }

/// `AVERROR_EOF` expands to `FFERRTAG('E','O','F',' ')`, a function-like macro call,
/// so Swift sees no constant.
static inline int cffmpeg_averror_eof(void) { return AVERROR_EOF; }

/// `AVERROR_INVALIDDATA` is an FFERRTAG expression; decoders return it for corrupt input,
/// which the transcoder counts and skips instead of failing the stream.
static inline int cffmpeg_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }

/// `AVERROR_ENCODER_NOT_FOUND` / `AVERROR_DECODER_NOT_FOUND`: FFERRTAG expressions;
/// reported when libavcodec lacks libx264 or an H.264/H.265 decoder.
static inline int cffmpeg_averror_encoder_not_found(void) { return AVERROR_ENCODER_NOT_FOUND; }
static inline int cffmpeg_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }

/// `AVERROR_MUXER_NOT_FOUND` is an FFERRTAG (MKTAG-based) expression; not importable.
static inline int cffmpeg_averror_muxer_not_found(void) { return AVERROR_MUXER_NOT_FOUND; }

/// `AV_NOPTS_VALUE` is `((int64_t)UINT64_C(0x8000000000000000))`: a cast expression,
/// which the importer skips.
static inline int64_t cffmpeg_av_nopts_value(void) { return AV_NOPTS_VALUE; }

/// `AV_ERROR_MAX_STRING_SIZE` is importable, but `av_err2str` is a macro around a
/// compound literal. This is the replacement: it fills a caller-owned buffer of
/// `size` bytes (at least `AV_ERROR_MAX_STRING_SIZE`) and never fails — for an unknown
/// code av_strerror already writes a generic "Error number N occurred".
static inline const char *cffmpeg_av_err2str(int code, char *buffer, size_t size) {
    av_strerror(code, buffer, size);
    return buffer;
}

/// `MKTAG('a','v','c','1')` etc.: MKTAG is a function-like macro. These are the
/// ISO BMFF sample-entry FourCCs set as `codec_tag` on the MP4 tracks.
static inline uint32_t cffmpeg_tag_avc1(void) { return MKTAG('a', 'v', 'c', '1'); }
static inline uint32_t cffmpeg_tag_hvc1(void) { return MKTAG('h', 'v', 'c', '1'); }
static inline uint32_t cffmpeg_tag_mp4a(void) { return MKTAG('m', 'p', '4', 'a'); }

#endif
