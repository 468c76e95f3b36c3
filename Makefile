# Estuary: the two everyday commands are `make run` and `make test`.
SWIFT ?= swift
ARGS ?=

.PHONY: deps deps-run build release run test fuzz fuzz-long bench-fanout bench-reload bench-hooks bench-srt bench-srt-latency bench-hls bench-transcode bench-transcode-hevc bench-multitrack bench-transcode-churn bench-cluster bench-cluster-soak bench-edge bench-latency bench-syscalls bench-profile clean

## Everything `make test` needs: Debian packages (test tools, chromium) and the Python
## virtualenv .venv/ with Playwright and cryptography (scripts/install-deps.sh --test).
deps:
	@scripts/install-deps.sh --test

## Only what building and running a node needs (scripts/install-deps.sh --run).
deps-run:
	@scripts/install-deps.sh --run

build: deps
	$(SWIFT) build

release: deps-run
	$(SWIFT) build -c release --product estuary

## Build and start a node with every role in one process (RTMP :1935, HTTP :8080).
run: release
	.build/release/estuary $(ARGS)

## Build and run every test: a short bounded run of each fuzz target, then unit tests and
## integration tests with ffmpeg/ffprobe/rtmpdump/chromium (the test summary comes last).
test: deps
	$(SWIFT) build --build-tests
	scripts/fuzz.sh --seconds $${FUZZ_SECONDS:-20}
	$(SWIFT) test --skip-build --no-parallel

## Run each libFuzzer target (FUZZ_SECONDS each, default 60).
fuzz: deps
	scripts/fuzz.sh --seconds $${FUZZ_SECONDS:-60}

## Each libFuzzer target in a release build (still -sanitize=fuzzer,address, in .build-fuzz-release)
## for FUZZ_SECONDS (default 600), then a markdown table of executions per target (docs/fuzzing.md).
fuzz-long: deps
	scripts/fuzz.sh --release --summary --seconds $${FUZZ_SECONDS:-600}

## Fan-out benchmark against nginx-rtmp; writes docs/benchmarks.md figures to stdout.
bench-fanout:
	@scripts/install-deps.sh --bench
	scripts/bench-fanout.sh

## Reload under load: 10 publishers and 1000 viewers while the configuration is reloaded 10 times.
bench-reload:
	@scripts/install-deps.sh --bench
	scripts/bench-reload.sh

## Admission through a webhook: what an on_play hook on a local backend adds, at 100 plays a second.
bench-hooks:
	@scripts/install-deps.sh --bench
	scripts/bench-hooks.sh

bench-srt:
	@scripts/install-deps.sh --bench
	scripts/bench-srt.sh

## SRT ingest to RTMP viewer latency beside RTMP ingest (SRT latency 120 ms, loopback); figures for docs/benchmarks.md.
bench-srt-latency: deps
	scripts/bench-srt-latency.sh

## HLS / LL-HLS availability latency and CPU per 100 HLS viewers; figures for docs/benchmarks.md.
bench-hls: deps
	scripts/bench-hls.sh

## An encoder-made 3-track (multitrack) ladder against transcoding the same ladder: node CPU; figures for docs/benchmarks.md.
bench-multitrack: deps
	scripts/bench-multitrack.sh

## ABR ladder transcoding against the ffmpeg CLI on the same settings; figures for docs/benchmarks.md.
bench-transcode: deps
	scripts/bench-transcode.sh

## The same from an HEVC source (enhanced FLV, remuxed by PyAV) into the H.264 ladder, against the ffmpeg CLI.
bench-transcode-hevc: deps
	SOURCE_CODEC=hevc scripts/bench-transcode.sh

## Transcoder memory under job churn: the pipeline JOBS=60 times in one process, RSS and heap after each job,
## as the heap leaves it and with freed pages handed back (as the node does). Figures for docs/benchmarks.md.
bench-transcode-churn: deps
	scripts/bench-transcode-churn.sh

## The cluster hop (ingest → NATS → relay) against one process: added latency, relay CPU per Gbit;
## then transcoder failover (kill -9 of the ladder's transcoder: time until rung viewers get a new keyframe). STAGES=hop,failover.
bench-cluster: deps
	scripts/bench-cluster.sh

## Cluster soak (issue 23): DURATION=1800 s of 3 publishers churning into abr, VIEWERS=50 HTTP-FLV viewers over
## the rungs and two relays, kill -9 of a transcoder every KILL_EVERY=300 s, one relay restart; drops and gaps by
## cause, failover times, RSS of every process each minute. Fails on an unexplained drop or growing RSS.
bench-cluster-soak: deps
	scripts/bench-cluster-soak.sh

## Edges: latency each edge tier adds (origin → edge → edge), and edge CPU per Gbit against a relay.
bench-edge: deps
	scripts/bench-edge.sh

## Latency against load: HTTP-FLV publish → viewer latency and CPU per Gbit, adaptive vs fixed merged writes.
bench-latency: deps
	scripts/bench-latency.sh

## Syscalls per delivered MB (strace -c): Estuary RTMP and HTTP-FLV beside nginx-rtmp.
bench-syscalls:
	@scripts/install-deps.sh --bench
	scripts/bench-syscalls.sh

## Where the CPU goes (perf record): Estuary RTMP and HTTP-FLV beside nginx-rtmp, 1000 viewers.
bench-profile:
	@scripts/install-deps.sh --bench
	scripts/bench-profile.sh

## Scale and soak: 10,000 viewers of a 64 kbit/s stream for 10 min, then 30 min of churn; RSS each minute.
bench-soak: deps
	scripts/bench-soak.sh

clean:
	rm -rf .build .build-fuzz
