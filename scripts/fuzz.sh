#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/*) with -sanitize=fuzzer,address and runs each for a
# bounded time, seeded with the project's corpus (Tests/FuzzCorpus) where it fits.
# Usage: scripts/fuzz.sh [--seconds N] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  targets=(FuzzChunkDecoder FuzzAMF0 FuzzCommand FuzzHandshake FuzzCodecConfig FuzzFLV FuzzMediaBus)
fi

seeds="Tests/FuzzCorpus"
scratch=".build-fuzz"
build() {
  ESTUARY_FUZZ=1 swift build --scratch-path "$scratch" -c debug \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld "$@"
}

products=()
for target in "${targets[@]}"; do products+=(--product "$target"); done
# One product per invocation keeps SwiftPM from relinking everything for each.
for target in "${targets[@]}"; do
  build --product "$target" 2>&1 | grep -vE "^(warning: .*unhandled|\[[0-9]+/[0-9]+\])" || true
  [[ -x "$scratch/debug/$target" ]] || { echo "fuzz: $target did not build" >&2; exit 1; }
done

failed=0
for target in "${targets[@]}"; do
  corpus="Fuzz/.out/$target/corpus"
  artifacts="Fuzz/.out/$target/"
  mkdir -p "$corpus"
  seed_dirs=()
  case "$target" in
    FuzzChunkDecoder) seed_dirs=("$seeds/chunkstream" "$seeds/gortmplib/rawmessage" "$seeds/gortmplib/message" "$seeds/gortmplib/chunk") ;;
    FuzzAMF0|FuzzCommand) seed_dirs=("$seeds/gortmplib/amf0") ;;
  esac
  existing=()
  for dir in "${seed_dirs[@]}"; do [[ -d "$dir" ]] && existing+=("$dir"); done
  echo "fuzz: $target for ${seconds}s"
  if ! "$scratch/debug/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts" -print_final_stats=1 "$corpus" "${existing[@]}" \
        > "Fuzz/.out/$target/log.txt" 2>&1; then
    echo "fuzz: $target FAILED; see Fuzz/.out/$target/log.txt" >&2
    tail -30 "Fuzz/.out/$target/log.txt" >&2
    failed=1
  else
    grep -E "stat::number_of_executed_units|cov:" "Fuzz/.out/$target/log.txt" | tail -2 | sed "s/^/  /"
  fi
done
exit $failed
