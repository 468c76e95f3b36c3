#!/usr/bin/env bash
# Installs the Debian packages Estuary needs to build, run and test, if any are missing.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds nginx + nginx-rtmp, the benchmark reference)
set -euo pipefail

packages=(
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev
  libnats-dev librtmp-dev libsqlite3-dev nats-server ffmpeg rtmpdump pkg-config curl chromium openssl
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(nginx libnginx-mod-rtmp)
fi

# The HLS browser test drives Debian's chromium through Playwright for Python.
if ! python3 -c "import playwright" 2>/dev/null; then
  python3 -m pip install --quiet playwright
fi
# scripts/nats-credentials.py (and the NATS credentials-file test) signs with Ed25519.
if ! python3 -c "import cryptography" 2>/dev/null; then
  python3 -m pip install --quiet cryptography
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "installing: ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
