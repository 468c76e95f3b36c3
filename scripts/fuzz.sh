#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/*) with -sanitize=fuzzer,address and runs each for a
# bounded time, seeded with the project's corpus (Tests/FuzzCorpus) where it fits.
# Usage: scripts/fuzz.sh [--seconds N] [--release] [--summary] [--no-build] [target ...]
#   --seconds N  run each target for N seconds (default 20)
#   --release    build with -c release into .build-fuzz-release (still -sanitize=fuzzer,address):
#                several times the executions per second, but assert() and SwiftNIO's debug-only
#                checks are compiled out; the default is a debug build in .build-fuzz
#   --no-build   run the targets as last built (two runs side by side share one build)
#   --summary    end with a markdown table of each target's result, executions and executions
#                per second (docs/fuzzing.md)
# The corpus each run grows (Fuzz/.out/<target>/corpus) is shared by debug and release runs.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
configuration=debug
summary=0
build_first=1
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --release) configuration=release; shift ;;
    --summary) summary=1; shift ;;
    --no-build) build_first=0; shift ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  targets=(FuzzChunkDecoder FuzzAMF0 FuzzCommand FuzzHandshake FuzzCodecConfig FuzzFLV FuzzMediaBus
           FuzzRTMPConnection FuzzHTTPPath FuzzBusFrame FuzzMetadata FuzzRTMPClient FuzzToken FuzzSRTInput)
fi

seeds="Tests/FuzzCorpus"
if [[ $configuration == release ]]; then scratch=".build-fuzz-release"; else scratch=".build-fuzz"; fi
build() {
  ESTUARY_FUZZ=1 swift build --scratch-path "$scratch" -c "$configuration" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld "$@"
}

# One product per invocation keeps SwiftPM from relinking everything for each.
for target in "${targets[@]}"; do
  if ((build_first)); then
    build --product "$target" 2>&1 | grep -vE "^(warning: .*unhandled|\[[0-9]+/[0-9]+\])" || true
  fi
  [[ -x "$scratch/$configuration/$target" ]] || { echo "fuzz: $target did not build" >&2; exit 1; }
done

# "name|result|seconds|executions|executions per second|cov|ft" per target, for --summary.
rows=()
failed=0
for target in "${targets[@]}"; do
  out="Fuzz/.out/$target"
  corpus="$out/corpus"
  mkdir -p "$corpus"
  seed_dirs=()
  extra=()
  environment=()
  case "$target" in
    FuzzChunkDecoder) seed_dirs=("$seeds/chunkstream" "$seeds/gortmplib/rawmessage" "$seeds/gortmplib/message" "$seeds/gortmplib/chunk") ;;
    FuzzAMF0|FuzzCommand) seed_dirs=("$seeds/gortmplib/amf0") ;;
    FuzzMediaBus|FuzzBusFrame) seed_dirs=("$seeds/busframe") ;;
    FuzzMetadata) seed_dirs=("$seeds/metadata" "$seeds/gortmplib/amf0") ;;
    FuzzHTTPPath) seed_dirs=("$seeds/httppath") ;;
    FuzzCodecConfig) seed_dirs=("$seeds/codecconfig") ;;
    FuzzRTMPClient) seed_dirs=("$seeds/client") ;;
    # An input is at most a few SRT messages of TS: libavformat probes up to 512 KiB.
    FuzzSRTInput) seed_dirs=("$seeds/srt"); extra=(-max_len=65536) ;;
    # The verifier's keys are made once, before the first input, and kept for the run; LSan
    # reports jwt-kit's key objects (held in its actor's storage) as leaked, at the inputs'
    # checks and at exit, so this target runs without leak detection (AddressSanitizer's
    # memory errors stay on).
    FuzzToken) seed_dirs=("$seeds/token"); extra=(-detect_leaks=0); environment=(ASAN_OPTIONS=detect_leaks=0) ;;
    # Its output bound (2 MiB) assumes inputs of a few kilobytes: a client can make the server
    # replay a GOP it published once per play, so media out grows with the square of the input.
    FuzzRTMPConnection) seed_dirs=("$seeds/connection"); extra=(-max_len=8192) ;;
  esac
  existing=()
  for dir in "${seed_dirs[@]}"; do [[ -d "$dir" ]] && existing+=("$dir"); done
  echo "fuzz: $target ($configuration) for ${seconds}s"
  start=$EPOCHREALTIME
  result=ok
  if ! env "${environment[@]}" "$scratch/$configuration/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$out/" -print_final_stats=1 "${extra[@]}" "$corpus" "${existing[@]}" \
        > "$out/log.txt" 2>&1; then
    result=FAILED
    echo "fuzz: $target FAILED; see $out/log.txt" >&2
    tail -30 "$out/log.txt" >&2
    failed=1
  else
    grep -aE "stat::number_of_executed_units|cov:" "$out/log.txt" | tail -2 | sed "s/^/  /"
  fi
  elapsed=$(awk -v start="$start" -v end="$EPOCHREALTIME" 'BEGIN { printf "%.1f", end - start }')
  units=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$out/log.txt" | tail -1)
  coverage=$(grep -aoE "cov: [0-9]+ ft: [0-9]+" "$out/log.txt" | tail -1 || true)
  cov=$(awk '{ print $2 }' <<< "$coverage")
  ft=$(awk '{ print $4 }' <<< "$coverage")
  rate=$(awk -v units="${units:-0}" -v elapsed="$elapsed" 'BEGIN { if (elapsed > 0) printf "%d", units / elapsed; else print 0 }')
  rows+=("$target|$result|$elapsed|${units:-?}|$rate|${cov:-?}|${ft:-?}")
done

if ((summary)); then
  echo
  echo "Fuzzing, $configuration build, ${seconds}s per target ($(date -u +%Y-%m-%d), $(uname -m), $(nproc) CPUs)"
  echo
  echo "| target | result | seconds | executions | executions/s | cov | ft |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
  for row in "${rows[@]}"; do
    IFS='|' read -r name result elapsed units rate cov ft <<< "$row"
    echo "| $name | $result | $elapsed | $units | $rate | $cov | $ft |"
  done
fi
exit $failed
