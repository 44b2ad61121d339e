#!/usr/bin/env bash
# Builds the cargo-fuzz targets in fuzz/ and runs each one, one at a time,
# for N seconds (default 10; first argument). Fails on a build failure or on
# any crash, leak, timeout or out-of-memory (the reproducer is left in
# fuzz/artifacts/TARGET/). Installs cargo-fuzz when it is missing.
#
#   scripts/fuzz-smoke.sh          # 10 s per target
#   scripts/fuzz-smoke.sh 120      # 2 min per target
#   FUZZ_TARGETS="scan utf8" scripts/fuzz-smoke.sh 30
#
# libFuzzer needs unstable rustc flags; on a stable toolchain they are
# enabled with RUSTC_BOOTSTRAP=1, as the project's docs say.
set -euo pipefail

secs="${1:-10}"
case "$secs" in
'' | *[!0-9]*)
	echo "fuzz-smoke: seconds must be a whole number, got '$secs'" >&2
	exit 2
	;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
	echo "fuzz-smoke: installing cargo-fuzz" >&2
	cargo install cargo-fuzz --locked
fi

echo "fuzz-smoke: building the fuzz targets" >&2
cargo fuzz build

targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
failed=()
for t in $targets; do
	log="$(mktemp "${TMPDIR:-/tmp}/fuzz-smoke-$t.XXXXXX")"
	mkdir -p "corpus/$t"
	echo "fuzz-smoke: $t for ${secs}s" >&2
	# One process (libFuzzer's default -jobs/-workers), bounded memory and
	# time per input, no leak detection noise from the allocator-heavy
	# renderer: a leak still fails via -error_exitcode.
	if cargo fuzz run "$t" "corpus/$t" -- \
		-max_total_time="$secs" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 >"$log" 2>&1; then
		runs="$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || true)"
		echo "fuzz-smoke: $t ok (${runs:-?} executions)" >&2
	else
		echo "fuzz-smoke: $t FAILED:" >&2
		# The panic or sanitizer report, the reproducer's path, and the
		# input as the target's Debug prints it (a Rust expression).
		{
			grep -E -A3 'panicked at|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)' "$log" | head -n 20
			grep -E 'Test unit written to' "$log"
			sed -n '/Output of `std::fmt::Debug`/,/^Reproduce with/p' "$log" | cut -c1-400 | head -n 60
		} >&2 || true
		if ! grep -qE 'panicked at|ERROR:' "$log"; then
			tail -n 40 "$log" >&2
		fi
		failed+=("$t")
	fi
	rm -f "$log"
done

if ((${#failed[@]})); then
	echo "fuzz-smoke: crashes in: ${failed[*]} (reproducers under fuzz/artifacts/)" >&2
	exit 1
fi
echo "fuzz-smoke: all targets ran ${secs}s without a crash" >&2
