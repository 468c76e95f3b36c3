#!/usr/bin/env bash
# Installs what Estuary needs, if any of it is missing: Debian packages with apt-get (through
# sudo when not root) and, for the tests, a project virtualenv at .venv/ with the Python tools.
#
# Usage: scripts/install-deps.sh [--run | --test | --bench]
#   --run    build and run a node only (`make run`, `make release`): pkg-config and the
#            libav*, libnats and SQLite development packages. No test tools, no Python.
#   --test   the default: everything `make test` needs (`make build`, `make fuzz` too): --run,
#            plus ffmpeg, rtmpdump, librtmp-dev, nats-server, srt-tools, curl, openssl, chromium,
#            gcc + libc6-dev, python3-venv, and the virtualenv .venv/ with Playwright for Python
#            and `cryptography`, schemathesis and PyAV, pip-installed into it with .venv/bin/pip.
#   --bench  --test plus nginx and nginx-rtmp, the fan-out benchmark's reference, strace and perf.
#
# Python packages never go into the system python (Debian 12 refuses: externally-managed-
# environment); tests and scripts run .venv/bin/python3, falling back to python3 without it.
# `playwright install` is never run: the browser test drives Debian's chromium.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

mode=test
case "${1:-}" in
  "" | --test) mode=test ;;
  --run) mode=run ;;
  --bench) mode=bench ;;
  -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown option '$1' (--run, --test or --bench)" >&2; exit 2 ;;
esac

# Build and run: the libraries the node links, found through pkg-config.
packages=(
  pkg-config
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
  libnats-dev libsqlite3-dev libsrt-gnutls-dev
)
if [[ $mode != run ]]; then
  # Tests: real peers (ffmpeg/ffprobe, rtmpdump, the librtmp publisher compiled with cc, SRT
  # tools), nats-server, curl, openssl, Debian's chromium, python3-venv for .venv/, and
  # iproute2 (ip, ss) for the multi-node tests in network namespaces.
  packages+=(
    ffmpeg rtmpdump librtmp-dev nats-server srt-tools curl openssl chromium
    gcc libc6-dev python3-venv iproute2
  )
fi
if [[ $mode == bench ]]; then
  packages+=(nginx libnginx-mod-rtmp strace linux-perf)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "installing: ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ $mode == run ]]; then
  exit 0
fi

# The project virtualenv, made with Debian's python (python3-venv) rather than whichever
# python3 comes first on PATH (a pyenv shim, say), and remade if its interpreter is gone.
venv="$repo/.venv"
if ! "$venv/bin/python3" -c "import sys" 2>/dev/null; then
  base=python3
  if [[ -x /usr/bin/python3 ]]; then base=/usr/bin/python3; fi
  echo "creating the virtualenv $venv ($base -m venv)"
  "$base" -m venv --clear "$venv"
fi
# The HLS browser test drives Debian's chromium through Playwright for Python;
# scripts/nats-credentials.py (and the NATS credentials-file test) signs with Ed25519.
if ! "$venv/bin/python3" -c "import playwright.sync_api, cryptography" 2>/dev/null; then
  echo "installing into $venv: playwright cryptography"
  "$venv/bin/pip" install --quiet playwright cryptography
fi
# `make test` runs schemathesis with docs/openapi.yaml against a running node
# (Tests/IntegrationTests/AdminAPIConformanceTests.swift).
if ! "$venv/bin/python3" -c "import schemathesis" 2>/dev/null; then
  echo "installing into $venv: schemathesis"
  "$venv/bin/pip" install --quiet "schemathesis>=4,<5"
fi
# The Enhanced RTMP publisher and viewer of the tests (Tests/Peers/pyav_*.py): PyAV's wheel
# bundles FFmpeg 7 or newer, whose FLV muxer and demuxer speak enhanced FLV.
if ! "$venv/bin/python3" -c "import av, sys; sys.exit(0 if av.library_versions['libavformat'][0] >= 61 else 1)" 2>/dev/null; then
  echo "installing into $venv: av (PyAV)"
  "$venv/bin/pip" install --quiet "av>=14"
fi
