#!/usr/bin/env python3
"""Writes the hand-built seeds of the fuzz corpus (python3, standard library only):

  connection/  FuzzRTMPConnection: 4 control bytes, then a client's chunk stream after the
               handshake (see Fuzz/FuzzRTMPConnection/main.swift for the control bytes)
  httppath/    FuzzHTTPPath: an HTTP request target
  metadata/    FuzzMetadata: a data message body (AMF0)
  busframe/    FuzzBusFrame and FuzzMediaBus: media bus messages, each behind a 2-byte length

Run it from anywhere: python3 Tests/FuzzCorpus/make_seeds.py. It rewrites those folders'
files, so the seeds stay reproducible; docs/fuzzing.md describes each set.
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(folder, name, data):
    directory = os.path.join(HERE, folder)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as file:
        file.write(bytes(data))


def clear(folder):
    directory = os.path.join(HERE, folder)
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            os.remove(os.path.join(directory, name))


# ---------------------------------------------------------------------------------------------
# AMF0

def utf8(text):
    return text if isinstance(text, bytes) else text.encode("utf-8")


def short(text):
    data = utf8(text)
    return struct.pack(">H", len(data)) + data


def number(value):
    return b"\x00" + struct.pack(">d", value)


def boolean(value):
    return b"\x01" + (b"\x01" if value else b"\x00")


def string(text):
    return b"\x02" + short(text)


def null():
    return b"\x05"


def undefined():
    return b"\x06"


def reference(index):
    return b"\x07" + struct.pack(">H", index)


def properties(pairs, end=True):
    body = b"".join(short(name) + value for name, value in pairs)
    return body + (b"\x00\x00\x09" if end else b"")


def obj(pairs):
    return b"\x03" + properties(pairs)


def ecma(pairs, end=True):
    return b"\x08" + struct.pack(">I", len(pairs)) + properties(pairs, end)


def strict(values):
    return b"\x0a" + struct.pack(">I", len(values)) + b"".join(values)


def date(milliseconds, zone=0):
    return b"\x0b" + struct.pack(">dh", milliseconds, zone)


def long_string(text):
    data = utf8(text)
    return b"\x0c" + struct.pack(">I", len(data)) + data


def xml(text):
    data = utf8(text)
    return b"\x0f" + struct.pack(">I", len(data)) + data


def typed(name, pairs):
    return b"\x10" + short(name) + properties(pairs)


# ---------------------------------------------------------------------------------------------
# Media: FLV tag bodies (the same as Fuzz/FuzzRTMPConnection's fixture)

# x264 constrained baseline 640x360 (Tests/MediaTests/Vectors.swift, avcBaseline360TagBody).
AVC_SEQUENCE_HEADER = bytes.fromhex(
    "17000000000142c01effe100196742c01ed900a02ff97011000003000100000300320f162e4801000568cb83cb20")
# AAC-LC 48 kHz mono (aacLC48000MonoTagBody).
AAC_SEQUENCE_HEADER = bytes.fromhex("af00118856e500")
KEYFRAME = bytes.fromhex("1701000000" "00000005" "6588840033")
INTERFRAME = bytes.fromhex("2701000028" "00000004" "419a0204")
AUDIO = bytes.fromhex("af01211004608c1c")

OBS_METADATA = [
    ("duration", number(0)), ("fileSize", number(0)), ("width", number(1280)), ("height", number(720)),
    ("videocodecid", number(7)), ("videodatarate", number(2500)), ("framerate", number(30)),
    ("audiocodecid", number(10)), ("audiodatarate", number(160)), ("audiosamplerate", number(48000)),
    ("audiosamplesize", number(16)), ("audiochannels", number(2)), ("stereo", boolean(True)),
    ("2.1", boolean(False)), ("3.1", boolean(False)), ("4.0", boolean(False)), ("4.1", boolean(False)),
    ("5.1", boolean(False)), ("7.1", boolean(False)),
    ("encoder", string("obs-output module (libobs version 30.0.2)")),
]
FFMPEG_METADATA = [
    ("duration", number(0)), ("width", number(640)), ("height", number(360)), ("videodatarate", number(0)),
    ("framerate", number(25)), ("videocodecid", number(7)), ("audiodatarate", number(0)),
    ("audiosamplerate", number(48000)), ("audiosamplesize", number(16)), ("stereo", boolean(False)),
    ("audiocodecid", number(10)), ("encoder", string("Lavf60.16.100")), ("filesize", number(0)),
]


def set_data_frame(pairs):
    return string("@setDataFrame") + string("onMetaData") + ecma(pairs)


# ---------------------------------------------------------------------------------------------
# The client's side of a chunk stream: a type 0 header per message, type 3 continuations.

class Client:
    def __init__(self):
        self.chunk_size = 128
        self.out = bytearray()

    def send(self, csid, type_id, stream_id, payload, timestamp=0):
        assert 2 <= csid <= 63
        header = bytes([csid]) + struct.pack(">I", timestamp)[1:] + struct.pack(">I", len(payload))[1:]
        self.out += header + bytes([type_id]) + struct.pack("<I", stream_id)
        for offset in range(0, max(len(payload), 1), self.chunk_size):
            if offset:
                self.out.append(0xC0 | csid)
            self.out += payload[offset:offset + self.chunk_size]
        return self

    def set_chunk_size(self, size):
        self.send(2, 1, 0, struct.pack(">I", size))
        self.chunk_size = size
        return self

    def window_acknowledgement_size(self, size):
        return self.send(2, 5, 0, struct.pack(">I", size))

    def ping(self, timestamp):
        return self.send(2, 4, 0, struct.pack(">HI", 6, timestamp))

    def command(self, name, transaction, *arguments, stream_id=0, csid=3, command_object=None):
        payload = string(name) + number(transaction) + (command_object or null()) + b"".join(arguments)
        return self.send(csid, 20, stream_id, payload)

    def connect(self, app="live", caps_ex=None):
        pairs = [
            ("app", string(app)), ("type", string("nonprivate")),
            ("flashVer", string("FMLE/3.0 (compatible; FMSc/1.0)")),
            ("tcUrl", string("rtmp://127.0.0.1:1935/" + app)),
        ]
        if caps_ex is not None:
            pairs.append(("capsEx", number(caps_ex)))
        return self.command("connect", 1, command_object=obj(pairs))

    def publish(self, name, transaction=5):
        return self.command("publish", transaction, string(name), string("live"), stream_id=1, csid=4)

    def play(self, name, transaction=4):
        return self.command("play", transaction, string(name), number(-2000), stream_id=1, csid=8)

    def media(self, pairs=OBS_METADATA):
        self.send(4, 18, 1, set_data_frame(pairs))
        self.send(6, 9, 1, AVC_SEQUENCE_HEADER)
        self.send(4, 8, 1, AAC_SEQUENCE_HEADER)
        self.send(6, 9, 1, KEYFRAME)
        self.send(4, 8, 1, AUDIO, timestamp=21)
        self.send(6, 9, 1, INTERFRAME, timestamp=33)
        self.send(4, 8, 1, AUDIO, timestamp=43)
        return self


def control(c2=0, stalls=False, small=False, shutdown=False, advance=0, cuts=(0x40, 0x80, 0xC0)):
    """The 4 control bytes of FuzzRTMPConnection; advance is in units of 10 s (0-7)."""
    flags = c2 | (0x04 if stalls else 0) | (0x08 if small else 0) | (0x10 if shutdown else 0) | (advance << 5)
    return bytes([flags]) + bytes(cuts)


def publisher(name="demo"):
    client = Client().connect()
    client.set_chunk_size(4096)
    client.command("releaseStream", 2, string(name))
    client.command("FCPublish", 3, string(name))
    client.command("createStream", 4)
    client.publish(name)
    return client.media()


def connection_seeds():
    folder = "connection"
    clear(folder)
    write(folder, "connect", control(cuts=(0, 0, 0)) + Client().connect().out)
    write(folder, "connect-c2-split", control(c2=2, cuts=(0x20, 0x60, 0xA0)) + Client().connect().ping(1234).out)
    # OBS's order: connect, chunk size 4096, releaseStream, FCPublish, createStream, publish,
    # then metadata and the AVC and AAC sequence headers, and a few frames.
    obs = publisher()
    obs.command("FCUnpublish", 6, string("demo"))
    obs.command("deleteStream", 7, number(1))
    write(folder, "publish", control(cuts=(0x30, 0x70, 0xB0)) + obs.out)
    # Everything in the read that completes the handshake: the publish decision comes after
    # all of it, so the media waits in the pending queue.
    write(folder, "publish-pipelined", control(c2=3, cuts=(0, 0, 0)) + publisher().out)
    # The same with the small limits and 30 s of virtual time after it (idle checks, timeouts).
    write(folder, "publish-small-limits", control(c2=1, small=True, advance=3) + publisher().out)
    # Names starting with "deny" are refused by the target's delegate.
    write(folder, "publish-denied", control() + Client().connect().command("createStream", 2).publish("deny-me").media().out)
    # Enhanced RTMP v2 publishers: the fixture asks them to reconnect once published.
    write(folder, "publish-enhanced-move", control() + Client().connect(caps_ex=1).command("createStream", 2).publish("move-me").media().out)
    write(folder, "publish-enhanced-stay", control() + Client().connect(caps_ex=3).command("createStream", 2).publish("stay").media().out)
    write(folder, "play-denied", control() + Client().connect().command("createStream", 2).play("deny-me").out)
    # A player of the fixture stream (metadata, configuration records, a GOP), with a ping,
    # a window size and a socket that stops taking bytes in the middle.
    player = Client().connect().window_acknowledgement_size(2_500_000).command("createStream", 2)
    player.command("getStreamLength", 3, string("fixture")).play("fixture").ping(99)
    write(folder, "play", control(stalls=True, cuts=(0x55, 0xAA, 0xFF)) + player.out)
    write(folder, "play-missing", control() + Client().connect().command("createStream", 2).play("missing").out)
    write(folder, "play-ended", control() + Client().connect().command("createStream", 2).play("ended").out)
    # Publish, stop, then play the stream just published; the server shuts down at the end.
    own = publisher("cam")
    own.command("closeStream", 0, stream_id=1, csid=4)
    own.command("createStream", 8)
    own.play("cam", transaction=9)
    write(folder, "publish-then-play", control(shutdown=True) + own.out)
    # Connected and then silent: 70 s of virtual time fire the session-start timeout.
    write(folder, "idle-after-connect", control(advance=7) + Client().connect().out)


# ---------------------------------------------------------------------------------------------
# HTTP request targets

def httppath_seeds():
    folder = "httppath"
    clear(folder)
    long_name = "k" * 128
    targets = {
        "flv": "/live/demo.flv",
        "flv-query": "/live/demo.flv?token=abc&x=1",
        "flv-dots": "/a.b/c.d.flv",
        "flv-longest": "/live/" + long_name + ".flv",
        "flv-too-long": "/live/" + long_name + "k.flv",
        "flv-double-slash": "//live//demo.flv",
        "flv-unicode": "/live/d\u00e9mo.flv",
        "flv-percent": "/live/%2e%2e.flv",
        "hls-master": "/live/demo/index.m3u8",
        "hls-master-ll": "/live/demo/llhls.m3u8",
        "hls-playlist": "/live/demo/src/index.m3u8",
        "hls-playlist-ll-blocking": "/live/demo/720p/llhls.m3u8?_HLS_msn=12&_HLS_part=3",
        "hls-playlist-ll-part-only": "/live/demo/720p/llhls.m3u8?_HLS_part=3",
        "hls-playlist-ll-bad-msn": "/live/demo/720p/llhls.m3u8?_HLS_msn=1234567890",
        "hls-segment-ts": "/live/demo/src/seg42.ts",
        "hls-segment-m4s": "/live/demo/src/seg42.m4s",
        "hls-init": "/live/demo/src/init0.mp4",
        "hls-part": "/live/demo/src/part42.3.m4s",
        "hls-part-malformed": "/live/demo/src/part42..m4s",
        "hls-leading-zeros": "/live/demo/src/seg000000042.ts",
        "hls-ten-digits": "/live/demo/src/seg1234567890.ts",
        "traversal": "/live/../../etc/passwd",
        "traversal-encoded": "/live/%2e%2e/%2e%2e/index.m3u8",
        "absolute-uri": "http://127.0.0.1:8080/live/demo.flv",
        "dot-name": "/live/.hidden/index.m3u8",
    }
    for name, target in targets.items():
        write(folder, name, target.encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# Metadata bodies

def metadata_seeds():
    folder = "metadata"
    clear(folder)
    write(folder, "obs", set_data_frame(OBS_METADATA))
    write(folder, "ffmpeg", set_data_frame(FFMPEG_METADATA))
    write(folder, "onmetadata-object", string("onMetaData") + obj(FFMPEG_METADATA))
    write(folder, "ecma-without-end", string("@setDataFrame") + string("onMetaData") + ecma(FFMPEG_METADATA, end=False))
    write(folder, "nested-ecma-without-end",
          string("onMetaData") + ecma([("a", ecma([("b", ecma([("c", number(1))], end=False))], end=False))], end=False))
    invalid = [
        ("encoder", string(b"\xff\xfe broken \xc3")),
        (b"ti\xe9tle", string(b"\xed\xa0\x80 surrogate, \xc0\xaf overlong")),
        ("empty", string(b"")),
    ]
    write(folder, "invalid-utf8", set_data_frame(invalid))
    write(folder, "all-invalid-utf8", string("onMetaData") + long_string(b"\xff" * 600))
    keyframes = obj([
        ("times", strict([number(t) for t in (0, 2, 4, 6)])),
        ("filepositions", strict([number(p) for p in (13, 40960, 81920, 122880)])),
    ])
    write(folder, "keyframe-index", set_data_frame(FFMPEG_METADATA + [("keyframes", keyframes)]))
    write(folder, "every-type", string("onMetaData") + ecma([
        ("n", number(float("nan"))), ("b", boolean(True)), ("s", string("x")), ("o", obj([("k", null())])),
        ("u", undefined()), ("r", reference(0)), ("a", strict([number(1), string("y")])),
        ("d", date(1.7e12, -60)), ("l", long_string("long")), ("x", xml("<a/>")),
        ("t", typed("Class", [("f", number(2))])),
    ]))
    write(folder, "not-metadata", string("onCuePoint") + obj([("name", string("cue"))]))
    write(folder, "setdataframe-trailing", set_data_frame(FFMPEG_METADATA) + number(1) + string("extra"))


# ---------------------------------------------------------------------------------------------
# Media bus messages

def bus_header(kind, keyframe, sequence_header, epoch, sequence, timestamp, composition, index, count, length):
    flags = (1 if keyframe else 0) | (2 if sequence_header else 0)
    return struct.pack(">BBBBIQqiHHI", 0xEB, 1, kind, flags, epoch, sequence, timestamp, composition, index, count, length)


def bus_frame(kind, body, epoch=1, sequence=0, timestamp=0, keyframe=False, sequence_header=False, fragment_size=None):
    """The messages of one frame, fragmented at fragment_size bytes of body."""
    size = fragment_size or max(len(body), 1)
    pieces = [body[offset:offset + size] for offset in range(0, len(body), size)] or [b""]
    return [bus_header(kind, keyframe, sequence_header, epoch, sequence, timestamp, 0, index, len(pieces), len(body)) + piece
            for index, piece in enumerate(pieces)]


def framed(messages):
    return b"".join(struct.pack(">H", len(message)) + message for message in messages)


def busframe_seeds():
    folder = "busframe"
    clear(folder)
    metadata = string("onMetaData") + ecma(FFMPEG_METADATA)
    stream = []
    stream += bus_frame(18, metadata, sequence=0)
    stream += bus_frame(8, AAC_SEQUENCE_HEADER, sequence=1, sequence_header=True)
    stream += bus_frame(9, AVC_SEQUENCE_HEADER, sequence=2, keyframe=True, sequence_header=True)
    stream += bus_frame(9, KEYFRAME, sequence=3, keyframe=True)
    stream += bus_frame(8, AUDIO, sequence=4, timestamp=21)
    stream += bus_frame(9, INTERFRAME, sequence=5, timestamp=33)
    write(folder, "stream", framed(stream))
    big = KEYFRAME + bytes(range(256)) * 3
    write(folder, "fragmented", framed(bus_frame(9, big, sequence=7, keyframe=True, fragment_size=300)))
    lost = bus_frame(9, big, sequence=7, keyframe=True, fragment_size=300)
    write(folder, "fragment-lost", framed(lost[:1] + lost[2:] + bus_frame(9, INTERFRAME, sequence=8, timestamp=40)))
    write(folder, "gap", framed(bus_frame(9, KEYFRAME, sequence=0, keyframe=True) + bus_frame(9, INTERFRAME, sequence=2)
                                + bus_frame(9, KEYFRAME, sequence=3, keyframe=True, timestamp=2000)))
    write(folder, "new-epoch", framed(bus_frame(9, KEYFRAME, epoch=1, sequence=9, keyframe=True)
                                      + bus_frame(8, AUDIO, epoch=2, sequence=0) + bus_frame(9, KEYFRAME, epoch=2, sequence=1, keyframe=True)))
    write(folder, "duplicate", framed(bus_frame(8, AUDIO, sequence=4) * 2 + bus_frame(8, AUDIO, sequence=5)))
    # A first message of 256 bytes or more: its length's high byte is odd, the join flag of
    # FuzzMediaBus and FuzzBusFrame.
    write(folder, "joins-mid-gop", framed(bus_frame(9, INTERFRAME + bytes(300), sequence=12)
                                          + bus_frame(9, KEYFRAME, sequence=13, keyframe=True)))


def status(code, level="status"):
    return obj([("level", string(level)), ("code", string(code))])


def server_answers(start_code=None):
    """What a server sends an RTMP client (FuzzRTMPClient) after the handshake: chunk size,
    window, connect and createStream results, then the play or publish status. The chunk
    writer is the same as a client's."""
    server = Client().set_chunk_size(4096).window_acknowledgement_size(2500000)
    server.command("_result", 1, status("NetConnection.Connect.Success"),
                   command_object=obj([("fmsVer", string("FMS/3,0,1,123"))]))
    server.command("_result", 2, number(1))
    if start_code:
        level = "error" if "NotFound" in start_code or "BadName" in start_code else "status"
        server.command("onStatus", 0, status(start_code, level), stream_id=1, csid=5)
    return server


def client_seeds():
    folder = "client"
    clear(folder)
    # Control bytes: bit 0 publish, bit 1 small limits, bit 2 write frames, bit 3 accept
    # reconnect requests; two cut points.
    played = server_answers("NetStream.Play.Start").media().ping(1234)
    played.command("onStatus", 0, status("NetStream.Play.UnpublishNotify"), stream_id=1, csid=5)
    write(folder, "play", bytes([0, 0x55, 0xAA]) + played.out)
    write(folder, "play-not-found", bytes([0, 0x80, 0xC8]) + server_answers("NetStream.Play.StreamNotFound").out)
    write(folder, "play-small-limits", bytes([2, 0x40, 0x90]) + server_answers("NetStream.Play.Start").media().out)
    write(folder, "publish", bytes([5, 0x3C, 0x78]) + server_answers("NetStream.Publish.Start").ping(99).out)
    write(folder, "publish-refused", bytes([5, 0, 0]) + server_answers("NetStream.Publish.BadName").out)
    # Bit 3: the client advertises reconnects; the server asks it to move, with and without a URL.
    moved = server_answers("NetStream.Publish.Start")
    moved.command("onStatus", 0, obj([("level", string("status")), ("code", string("NetConnection.Connect.ReconnectRequest")),
                                      ("tcUrl", string("rtmp://127.0.0.1:1936/live"))]))
    moved.command("onStatus", 0, status("NetConnection.Connect.ReconnectRequest"))
    write(folder, "publish-reconnect-request", bytes([13, 0x30, 0x70]) + moved.out)


if __name__ == "__main__":
    client_seeds()
    connection_seeds()
    httppath_seeds()
    metadata_seeds()
    busframe_seeds()
