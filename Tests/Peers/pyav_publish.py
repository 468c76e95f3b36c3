#!/usr/bin/env python3
"""An Enhanced RTMP publisher no one here wrote: PyAV's bundled FFmpeg (7 or newer), whose
FLV muxer writes enhanced FLV (FourCC video: HEVC, AV1, VP9; Opus audio) and whose native
RTMP protocol publishes it.

    pyav_publish.py FILE URL [--loops N] [--unpaced] [--interleave-delta-us N]

Remuxes FILE (-c copy) to URL in real time (paced by DTS), looping N times (0: forever),
with timestamps running on across loops, as `ffmpeg -re -stream_loop` does. `--unpaced`
writes as fast as it can (URL a file: an enhanced FLV of FILE, for the benchmarks).
`--interleave-delta-us` bounds how long the muxer holds the other streams back for one
that has ended (FFmpeg waits 10 s): a clip whose stream stops early keeps the others flowing.
"""
import argparse
import sys
import time

import av


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("url")
    parser.add_argument("--loops", type=int, default=0)
    parser.add_argument("--unpaced", action="store_true")
    parser.add_argument("--interleave-delta-us", type=int, default=None,
                        help="FFmpeg's max_interleave_delta: how long the muxer waits for a stream that has ended")
    args = parser.parse_args()

    options = {}
    if args.interleave_delta_us is not None:
        options["max_interleave_delta"] = str(args.interleave_delta_us)
    output = av.open(args.url, "w", format="flv", options=options)
    source = av.open(args.file)
    streams = {}
    for stream in source.streams:
        if stream.type in ("video", "audio"):
            # Opaque: remuxed as they are, without a decoder for the codec in this build.
            streams[stream.index] = output.add_stream_from_template(stream, opaque=True)
    start = time.monotonic()
    offset = 0.0
    loop = 0
    while args.loops == 0 or loop < args.loops:
        if loop > 0:
            source.close()
            source = av.open(args.file)
        last = 0.0
        for packet in source.demux(list(source.streams)):
            if packet.dts is None or packet.stream.index not in streams:
                continue
            seconds = float(packet.dts * packet.time_base)
            last = max(last, seconds + float((packet.duration or 0) * packet.time_base))
            delay = start + offset + seconds - time.monotonic()
            if delay > 0 and not args.unpaced:
                time.sleep(delay)
            shift = int(offset / packet.time_base)
            packet.dts += shift
            if packet.pts is not None:
                packet.pts += shift
            packet.stream = streams[packet.stream.index]
            output.mux(packet)
        # The next loop starts after everything of this one, with room for a reordered
        # stream's negative first DTS.
        offset += last + 0.1
        loop += 1
    output.close()


if __name__ == "__main__":
    sys.exit(main())
