#!/usr/bin/env bash
# Runs each fuzz target for a bounded time. Not part of CI.
#
#   fuzz/run.sh                      # every target, 60 s each
#   FUZZ_SECONDS=600 fuzz/run.sh jwt # one target, 10 minutes
#
# Environment:
#   FUZZ_SECONDS    time per target, in seconds (default 60)
#   FUZZ_SANITIZER  cargo fuzz --sanitizer value (default address; "none" runs faster)
#   FUZZ_ARGS       extra libFuzzer flags, e.g. "-max_len=8192"
#   TESSERA_FUZZ_LOG  a tracing filter (e.g. "info"): the server under test logs to stderr
#
# Seeds in fuzz/seeds/<target>/ are copied into fuzz/corpus/<target>/ (kept between runs,
# not committed). A crash input is saved under fuzz/artifacts/<target>/ and stops that
# target; the script goes on with the next one and exits non-zero at the end. Reproduce with
#   cargo +nightly fuzz run -O <target> fuzz/artifacts/<target>/crash-...
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

seconds="${FUZZ_SECONDS:-60}"
sanitizer="${FUZZ_SANITIZER:-address}"
all_targets=(jwt request_bodies admin_protocol)
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=("${all_targets[@]}")
fi

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "the nightly toolchain is required: rustup toolchain install nightly" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

# Where the in-process servers keep their data; removed after each target.
export TESSERA_FUZZ_STATE="${TESSERA_FUZZ_STATE:-${TMPDIR:-/tmp}/tessera-fuzz-$$}"

# -O: release build without cargo-fuzz's blanket -Cdebug-assertions; fuzz/Cargo.toml's
# release profile turns debug assertions and overflow checks on itself (see there).
build_flags=(-O --sanitizer "$sanitizer")
cargo +nightly fuzz build "${build_flags[@]}"

failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    if [ -d "seeds/$t" ]; then
        cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
    fi
    # The server targets keep a whole server in the process: its caches and state outlive
    # every input, and LeakSanitizer would rescan its heap after most inputs (half the time
    # spent, for no finding).
    case "$t" in
        request_bodies | admin_protocol) leaks=(-detect_leaks=0) ;;
        *) leaks=() ;;
    esac
    echo "=== $t: ${seconds} s" >&2
    # -timeout: one input unanswered for 60 s is a hang (the server's own request timeout
    # is 30 s). -rss_limit_mb: the servers grow with the tenants and users bodies create.
    # shellcheck disable=SC2086
    if ! cargo +nightly fuzz run "${build_flags[@]}" "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 ${leaks[@]+"${leaks[@]}"} \
        -print_final_stats=1 ${FUZZ_ARGS:-}; then
        failed+=("$t")
    fi
    rm -rf "$TESSERA_FUZZ_STATE"
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "no crash in: ${targets[*]}" >&2
