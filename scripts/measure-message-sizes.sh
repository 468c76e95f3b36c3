#!/usr/bin/env bash
# Measures the largest RTMP audio/video messages that real encoders produce, to size
# ChunkLimits.maxMessageSize and the per-connection reassembly share (maxBufferedBytes).
#
# An RTMP audio/video message body is byte for byte the data of the corresponding FLV tag
# (AVC: 5-byte header + length-prefixed NAL units), so each clip is encoded to an FLV file
# and its tags are measured. Clips (DURATION seconds each, 60 fps, GOP 2 s):
#   - ffmpeg/libx264 4K60 at 50 Mbit/s CBR, -bufsize 50M (OBS-like) and 100M, on three
#     sources: testsrc2 (easy), testsrc2 + heavy temporal noise (every frame expensive), and
#     one frame of seeded random bytes repeated ("static": a still, maximally detailed
#     picture). The static one is the worst case: its P-frames cost nothing, so rate control
#     pours the GOP's budget into the keyframe until the VBV buffer stops it.
#   - ffmpeg/libx264 1080p60 at 6 Mbit/s, -bufsize 6M (OBS's Twitch/YouTube-typical CBR),
#     noisy and static sources
#   - GStreamer x264enc 4K60 at 50 Mbit/s (its default CBR, vbv-buf-capacity 600 ms) on
#     videotestsrc smpte, snow (temporal noise) and one snow frame held by imagefreeze, if
#     gst-launch-1.0 and the x264enc/h264parse/flvmux/imagefreeze elements are installed
#     (this script installs nothing: apt-get install --no-install-recommends
#     gstreamer1.0-tools gstreamer1.0-plugins-{base,good,ugly,bad}; h264parse is in -bad)
# Then measures any .flv/.mp4/.ts media the repository carries under Tests/ and Benchmarks/.
#
# With CBR/VBV the largest frame is bounded by the VBV buffer: bufsize bits / 8 bytes
# (50M -> 6,250,000 B = 5.96 MiB; 100M -> 12,500,000 B = 11.92 MiB), plus a few hundred
# bytes of SPS/PPS/SEI and tag header.
#
# Environment (all optional):
#   DURATION=3          seconds per clip
#   PRESET=ultrafast    x264 preset for every clip (OBS's default is veryfast: ~4x slower)
#   CLIP_TIMEOUT=600    seconds before one encode is killed
#   KEEP=1              keep the temporary directory (its path is printed)
# Everything runs under nice -n 19. Output: one markdown table on stdout, progress on stderr.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

DURATION=${DURATION:-3}
PRESET=${PRESET:-ultrafast}
CLIP_TIMEOUT=${CLIP_TIMEOUT:-600}
FPS=60
GOP=$((FPS * 2))
FRAMES=$((DURATION * FPS))

log() { printf '[measure-message-sizes %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
for tool in ffmpeg python3 timeout; do command -v "$tool" >/dev/null || die "$tool not found"; done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/measure-message-sizes.XXXXXX")
cleanup() { if [[ -n ${KEEP:-} ]]; then log "kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT

# FLV tag parser: prints one tab-separated row of sizes for a file.
cat >"$TMP/flvstat.py" <<'PY'
import struct, sys

def flv_stats(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:3] != b"FLV":
        raise SystemExit(f"{path}: not an FLV file")
    pos = struct.unpack(">I", data[5:9])[0] + 4  # header (9) + PreviousTagSize0 (4)
    video, key, inter, audio, first_ts, last_ts = [], [], [], [], None, 0
    while pos + 11 <= len(data):
        ttype = data[pos] & 0x1F
        size = int.from_bytes(data[pos + 1:pos + 4], "big")
        ts = int.from_bytes(data[pos + 4:pos + 7], "big") | (data[pos + 7] << 24)
        body = data[pos + 11:pos + 11 + size]
        if len(body) < size:
            break  # truncated last tag
        if ttype == 9 and size >= 2:
            codec = body[0] & 0x0F
            is_frame = not (codec in (7, 12) and body[1] != 1)  # skip AVC/HEVC seq header, EOS
            if is_frame:
                video.append(size)
                (key if body[0] >> 4 == 1 else inter).append(size)
                first_ts = ts if first_ts is None else first_ts
                last_ts = ts
        elif ttype == 8:
            audio.append(size)
        pos += 11 + size + 4
    return video, key, inter, audio, first_ts or 0, last_ts

mib = lambda n: f"{n / 1048576:.2f}"
for path in sys.argv[1:]:
    v, k, i, a, t0, t1 = flv_stats(path)
    secs = (t1 - t0) / 1000 + (1 / 60)
    kbps = sum(v) * 8 / secs / 1000 if v else 0
    print("\t".join(str(x) for x in (
        max(v, default=0), mib(max(v, default=0)),
        round(sum(v) / len(v)) if v else 0,
        max(k, default=0), len(k), max(i, default=0),
        max(a, default="-"), len(v), f"{kbps / 1000:.1f}")))
PY

ROWS="$TMP/rows.tsv"
: >"$ROWS"
# measure NAME SETTINGS FILE LOG: appends a row (and the count of x264 VBV underflow warnings)
measure() {
  local name=$1 settings=$2 file=$3 logfile=$4 stats underflows
  stats=$(nice -n 19 python3 "$TMP/flvstat.py" "$file")
  underflows=$(grep -ci 'vbv underflow' "$logfile" || true)
  printf '%s\t%s\t%s\t%s\n' "$name" "$settings" "$stats" "$underflows" >>"$ROWS"
}

SRC_EASY="testsrc2=size=%s:rate=$FPS"
SRC_NOISY="testsrc2=size=%s:rate=$FPS,noise=alls=60:allf=t+u"
AUDIO=(-f lavfi -i "sine=frequency=440:sample_rate=48000")
# One yuv420p frame of seeded (reproducible) random bytes per size, looped by ffmpeg.
static_frame() { # size -> path
  local w=${1%x*} h=${1#*x} path="$TMP/static-$1.yuv"
  [[ -f $path ]] || python3 -c 'import random, sys; random.seed(1); sys.stdout.buffer.write(random.randbytes(int(sys.argv[1])))' \
    $((w * h * 3 / 2)) >"$path"
  echo "$path"
}

ffmpeg_clip() { # name size source-template|static bitrate maxrate bufsize
  local name=$1 size=$2 bitrate=$4 maxrate=$5 bufsize=$6 start input
  if [[ $3 == static ]]; then
    input=(-f rawvideo -pix_fmt yuv420p -s "$size" -r "$FPS" -stream_loop -1 -i "$(static_frame "$size")")
  else
    # shellcheck disable=SC2059
    input=(-f lavfi -i "$(printf "$3" "$size"),format=yuv420p")
  fi
  log "ffmpeg: $name ($size, $bitrate/$maxrate/$bufsize, $PRESET)"
  start=$SECONDS
  nice -n 19 timeout "$CLIP_TIMEOUT" ffmpeg -nostdin -hide_banner -loglevel warning -y \
    "${input[@]}" "${AUDIO[@]}" -t "$DURATION" \
    -c:v libx264 -preset "$PRESET" -profile:v high -b:v "$bitrate" -maxrate "$maxrate" \
    -bufsize "$bufsize" -g "$GOP" -keyint_min "$GOP" -sc_threshold 0 -r "$FPS" \
    -c:a aac -b:a 160k -ar 48000 -ac 2 \
    -f flv "$TMP/$name.flv" 2>"$TMP/$name.log" || die "$name failed: $(tail -3 "$TMP/$name.log")"
  log "  done in $((SECONDS - start)) s"
  measure "$name" "ffmpeg libx264 $PRESET, $size@$FPS, -b:v $bitrate -maxrate $maxrate -bufsize $bufsize, g=$GOP" \
    "$TMP/$name.flv" "$TMP/$name.log"
}

T0=$SECONDS
ffmpeg_clip 4k60-easy-buf50M 3840x2160 "$SRC_EASY" 50M 50M 50M
ffmpeg_clip 4k60-easy-buf100M 3840x2160 "$SRC_EASY" 50M 50M 100M
ffmpeg_clip 4k60-noisy-buf50M 3840x2160 "$SRC_NOISY" 50M 50M 50M
ffmpeg_clip 4k60-noisy-buf100M 3840x2160 "$SRC_NOISY" 50M 50M 100M
ffmpeg_clip 4k60-static-buf50M 3840x2160 static 50M 50M 50M
ffmpeg_clip 4k60-static-buf100M 3840x2160 static 50M 50M 100M
ffmpeg_clip 1080p60-noisy-6M 1920x1080 "$SRC_NOISY" 6M 6M 6M
ffmpeg_clip 1080p60-static-6M 1920x1080 static 6M 6M 6M

gst_clip() { # name pattern [still]
  local name=$1 pattern=$2 start src
  if [[ ${3:-} == still ]]; then
    src=(videotestsrc pattern="$pattern" num-buffers=1 ! video/x-raw,width=3840,height=2160,framerate=$FPS/1
      ! imagefreeze num-buffers="$FRAMES")
    pattern="$pattern, one frame held by imagefreeze"
  else
    src=(videotestsrc pattern="$pattern" num-buffers="$FRAMES")
  fi
  log "gstreamer: $name (videotestsrc pattern=$pattern, x264enc $PRESET)"
  start=$SECONDS
  nice -n 19 timeout "$CLIP_TIMEOUT" gst-launch-1.0 -q "${src[@]}" \
    ! video/x-raw,width=3840,height=2160,framerate=$FPS/1 \
    ! x264enc bitrate=50000 speed-preset="$PRESET" key-int-max="$GOP" \
    ! h264parse ! flvmux ! filesink location="$TMP/$name.flv" \
    >"$TMP/$name.log" 2>&1 || die "$name failed: $(tail -3 "$TMP/$name.log")"
  log "  done in $((SECONDS - start)) s"
  measure "$name" "gst x264enc $PRESET, 3840x2160@$FPS, bitrate=50000 (cbr, vbv-buf-capacity=600ms), key-int-max=$GOP, videotestsrc $pattern" \
    "$TMP/$name.flv" "$TMP/$name.log"
}

if ! command -v gst-launch-1.0 >/dev/null; then
  log "gst-launch-1.0 not found: skipping the GStreamer clips"
elif ! gst-inspect-1.0 x264enc >/dev/null 2>&1 || ! gst-inspect-1.0 h264parse >/dev/null 2>&1 \
  || ! gst-inspect-1.0 flvmux >/dev/null 2>&1 || ! gst-inspect-1.0 imagefreeze >/dev/null 2>&1; then
  log "x264enc, h264parse, flvmux or imagefreeze missing (gstreamer1.0-plugins-ugly/-bad/-good): skipping the GStreamer clips"
else
  gst_clip gst-4k60-smpte smpte
  gst_clip gst-4k60-snow snow
  gst_clip gst-4k60-snow-still snow still
fi
ENCODE_SECONDS=$((SECONDS - T0))

# Media the project carries: FLV directly, MP4/TS remuxed (stream copy) to FLV first.
mapfile -d '' MEDIA < <(find Tests Benchmarks -type f \( -iname '*.flv' -o -iname '*.mp4' \
  -o -iname '*.ts' \) -print0 2>/dev/null || true)
for f in "${MEDIA[@]}"; do
  case ${f,,} in
    *.flv) measure "$f" "repository test data" "$f" /dev/null ;;
    *)
      out="$TMP/repo-$(basename "$f").flv"
      if nice -n 19 timeout "$CLIP_TIMEOUT" ffmpeg -nostdin -loglevel error -y -i "$f" -c copy -f flv "$out" 2>/dev/null; then
        measure "$f" "repository test data (remuxed to FLV)" "$out" /dev/null
      else
        log "could not remux $f to FLV"
      fi ;;
  esac
done

echo "| clip | settings | largest video msg (B) | MiB | avg video msg (B) | largest keyframe (B) | keyframes | largest inter frame (B) | largest audio msg (B) | video frames | video Mbit/s | x264 VBV underflows |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
while IFS=$'\t' read -r -a c; do
  printf '| %s |\n' "$(IFS='|'; echo "${c[*]}" | sed 's/|/ | /g')"
done <"$ROWS"
if ((${#MEDIA[@]} == 0)); then
  echo
  echo "No .flv/.mp4/.ts media under Tests/ or Benchmarks/."
fi
echo
echo "Encoding took ${ENCODE_SECONDS} s (preset $PRESET, ${DURATION} s clips, nice -n 19)."
echo "VBV ceiling: 50M bufsize -> 6250000 B (5.96 MiB); 100M -> 12500000 B (11.92 MiB); 6M -> 750000 B (0.72 MiB);"
echo "GStreamer x264enc 50000 kbit/s x 600 ms -> 3750000 B (3.58 MiB)."
