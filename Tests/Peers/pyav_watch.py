#!/usr/bin/env python3
"""A viewer that reads enhanced FLV: PyAV's bundled FFmpeg (8 or newer: 7's
rtmp_enhanced_codecs refuses `Opus`) plays URL (HTTP-FLV, or RTMP, where it announces the
enhanced codecs on connect) for SECONDS, decoding every
video frame, and prints what it saw as one JSON object.

    pyav_watch.py URL SECONDS [--announce FOURCCS]

Over RTMP it announces FOURCCS on connect (FFmpeg's rtmp_enhanced_codecs, sent as
fourCcList; default hvc1,av01,vp09); --announce "" announces none, as a legacy player.
"""
import array
import json
import sys
import time

import av


def main():
    url, seconds = sys.argv[1], float(sys.argv[2])
    announce = "hvc1,av01,vp09"
    if len(sys.argv) > 4 and sys.argv[3] == "--announce":
        announce = sys.argv[4]
    options = {"rtmp_enhanced_codecs": announce} if url.startswith("rtmp") and announce else {}
    av.logging.set_level(av.logging.ERROR)
    try:
        container = av.open(url, timeout=10, options=options)
    except av.error.FFmpegError as error:
        # What the server said (an RTMP play's NetStream.Play.Failed description), for the test.
        print(f"cannot open {url}: {error}; {av.logging.get_last_error()}", file=sys.stderr)
        return 1
    video = container.streams.video[0] if container.streams.video else None
    audio = container.streams.audio[0] if container.streams.audio else None
    report = {
        "video": video.codec_context.name if video else None,
        "audio": audio.codec_context.name if audio else None,
        "width": 0, "height": 0, "decoded": 0, "keyframes": 0, "firstIsKeyframe": None,
        "audioPackets": 0, "dtsRegressions": 0, "decodeErrors": 0, "longestWait": 0.0,
        # The audio's pitch, from sign changes of its first channel over its first five
        # seconds (a test tone tells one audio track from another); None when no audio was
        # decoded. Audio decode errors are counted apart from the video's.
        "audioFrequency": None, "audioDecodeErrors": 0,
    }
    crossings, audio_samples, sample_rate, previous_sign = 0, 0, 0, None
    last_dts, last_arrival = None, None
    begin = time.monotonic()
    for packet in container.demux():
        now = time.monotonic()
        if now - begin > seconds:
            break
        if packet.dts is None:
            continue
        if packet.stream is audio:
            report["audioPackets"] += 1
            if video is None:
                # An audio-only stream: its waits are the audio's.
                if last_arrival is not None:
                    report["longestWait"] = max(report["longestWait"], now - last_arrival)
                last_arrival = now
            # Five seconds are enough for a pitch; decoding more would cost the test machine.
            if sample_rate and audio_samples >= 5 * sample_rate:
                continue
            try:
                for frame in packet.decode():
                    if frame.format.name != "fltp":
                        continue
                    sample_rate = frame.sample_rate
                    for value in array.array("f", bytes(frame.planes[0]))[:frame.samples]:
                        sign = value >= 0
                        if previous_sign is not None and sign != previous_sign:
                            crossings += 1
                        previous_sign = sign
                    audio_samples += frame.samples
            except av.error.FFmpegError:
                report["audioDecodeErrors"] += 1
            continue
        if packet.stream is not video:
            continue
        if last_arrival is not None:
            report["longestWait"] = max(report["longestWait"], now - last_arrival)
        last_arrival = now
        if report["firstIsKeyframe"] is None:
            report["firstIsKeyframe"] = bool(packet.is_keyframe)
        report["keyframes"] += 1 if packet.is_keyframe else 0
        if last_dts is not None and packet.dts < last_dts:
            report["dtsRegressions"] += 1
        last_dts = packet.dts
        try:
            for frame in packet.decode():
                report["decoded"] += 1
                report["width"], report["height"] = frame.width, frame.height
        except av.error.FFmpegError:
            report["decodeErrors"] += 1
    container.close()
    if audio_samples and sample_rate:
        report["audioFrequency"] = round(crossings / 2 / (audio_samples / sample_rate))
    print(json.dumps(report))


if __name__ == "__main__":
    sys.exit(main())
