#!/usr/bin/env python3
"""Plays an HLS URL in headless Chromium's native <video> and checks that it advances.

Usage: play_hls.py URL SCREENSHOT [--advance SECONDS] [--within SECONDS] [--start-timeout SECONDS]
                   [--trust-spki BASE64] [--max-stall SECONDS] [--audio-tracks NAME,NAME,...]

Launches Debian's `chromium` (found on PATH, never a Playwright-downloaded browser) through
Playwright, loads a page with `<video muted autoplay playsinline src=URL>` and waits until
`currentTime` has advanced by at least --advance seconds (default 3) within --within seconds
(default 6) of wall time after playback started. Saves a screenshot either way.
--trust-spki trusts, over https://, a chain that holds a certificate with that public key
(base64 of the SHA-256 of its SubjectPublicKeyInfo: a test's own CA, served in the chain);
without it, Chromium trusts what the system trusts.
--max-stall fails the run when currentTime stands still longer than that (wall seconds) once
playback started. --audio-tracks turns on the page's `audioTracks` (Blink's AudioVideoTracks
feature) and fails unless the video's audio tracks are exactly those labels, in that order
(the master's EXT-X-MEDIA audio group).
Exit 0 on success; 1 with a message on stderr otherwise; 2 when chromium or playwright is
missing (the caller may skip). Playwright lives in the project virtualenv .venv/ (made by
scripts/install-deps.sh); the script re-runs itself with .venv/bin/python3 when that exists.
"""

import argparse
import json
import os
import shutil
import sys
import time

_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".venv")
_VENV_PYTHON = os.path.join(_VENV, "bin", "python3")
if (
    os.access(_VENV_PYTHON, os.X_OK)
    and os.path.realpath(sys.prefix) != os.path.realpath(_VENV)
    and "ESTUARY_VENV_REEXEC" not in os.environ
):
    os.environ["ESTUARY_VENV_REEXEC"] = "1"
    os.execv(_VENV_PYTHON, [_VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("screenshot")
    parser.add_argument("--advance", type=float, default=3.0)
    parser.add_argument("--within", type=float, default=6.0)
    parser.add_argument("--start-timeout", type=float, default=15.0, help="seconds to wait for playback to start")
    parser.add_argument("--trust-spki", default=None, help="base64 SHA-256 of a trusted certificate's SubjectPublicKeyInfo")
    parser.add_argument("--max-stall", type=float, default=None, help="longest wall time currentTime may stand still")
    parser.add_argument("--audio-tracks", default=None, help="the audio tracks' labels expected, comma-separated")
    args = parser.parse_args()

    executable = shutil.which("chromium")
    if executable is None:
        print("SKIP: chromium is not on PATH (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("SKIP: the playwright Python package is missing (scripts/install-deps.sh installs it into .venv/)", file=sys.stderr)
        return 2

    page_html = (
        "<!doctype html><html><body style='margin:0;background:#000'>"
        f"<video id=v muted autoplay playsinline width=640 height=360 src={json.dumps(args.url)}></video>"
        "</body></html>"
    )
    state_js = """() => { const v = document.getElementById('v');
        return { t: v.currentTime, rs: v.readyState, ns: v.networkState, paused: v.paused,
                 err: v.error ? (v.error.code + ': ' + v.error.message) : null,
                 w: v.videoWidth, h: v.videoHeight,
                 canPlay: v.canPlayType('application/vnd.apple.mpegurl'),
                 audio: v.audioTracks ? Array.from(v.audioTracks).map(t => t.label) : null }; }"""

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required", "--mute-audio"]
            + ([f"--ignore-certificate-errors-spki-list={args.trust_spki}"] if args.trust_spki else [])
            + (["--enable-blink-features=AudioVideoTracks"] if args.audio_tracks else []),
        )
        try:
            page = browser.new_page(viewport={"width": 640, "height": 360})
            console = []
            page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            page.set_content(page_html)
            page.evaluate("() => document.getElementById('v').play().catch(e => console.log('play() rejected: ' + e))")

            # Wait for playback to start: currentTime > 0 (bounded).
            deadline = time.monotonic() + args.start_timeout
            state = page.evaluate(state_js)
            while state["t"] <= 0 and state["err"] is None and time.monotonic() < deadline:
                time.sleep(0.1)
                state = page.evaluate(state_js)
            if state["err"] is not None or state["t"] <= 0:
                page.screenshot(path=args.screenshot)
                print(f"FAIL: playback did not start within {args.start_timeout} s: {state}; console: {console[-10:]}", file=sys.stderr)
                return 1

            # From here, currentTime must advance by --advance seconds within --within seconds.
            start_wall = time.monotonic()
            start_time = state["t"]
            advanced = 0.0
            # The longest wall time currentTime stood still.
            last_time, last_move, longest_stall = state["t"], start_wall, 0.0
            while time.monotonic() - start_wall < args.within:
                time.sleep(0.1)
                state = page.evaluate(state_js)
                now = time.monotonic()
                if state["t"] > last_time:
                    last_time, last_move = state["t"], now
                longest_stall = max(longest_stall, now - last_move)
                advanced = state["t"] - start_time
                if state["err"] is not None or advanced >= args.advance:
                    break
            elapsed = time.monotonic() - start_wall
            page.screenshot(path=args.screenshot)
            if state["err"] is not None or advanced < args.advance:
                print(f"FAIL: currentTime advanced {advanced:.2f} s in {elapsed:.2f} s (wanted {args.advance} s within {args.within} s): {state}; console: {console[-10:]}", file=sys.stderr)
                return 1
            if args.max_stall is not None and longest_stall > args.max_stall:
                print(f"FAIL: currentTime stood still {longest_stall:.2f} s (at most {args.max_stall} s): {state}; console: {console[-10:]}", file=sys.stderr)
                return 1
            if args.audio_tracks is not None:
                expected = args.audio_tracks.split(",")
                if state["audio"] != expected:
                    print(f"FAIL: the video's audio tracks are {state['audio']}, expected {expected}", file=sys.stderr)
                    return 1
            print(f"OK: currentTime {start_time:.2f} -> {state['t']:.2f} s ({advanced:.2f} s in {elapsed:.2f} s wall, longest stall {longest_stall:.2f} s), "
                  f"video {state['w']}x{state['h']}, audio tracks {state['audio']}, canPlayType {state['canPlay']!r}")
            return 0
        finally:
            browser.close()


if __name__ == "__main__":
    sys.exit(main())
