#!/usr/bin/env bash
# Sets up (idempotent) and runs the whole test suite: formatting, clippy with -D warnings,
# and every test of the workspace (snapshots are checked, never written: INSTA_UPDATE=no).
# Ends with one line totalling the tests cargo ran.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export INSTA_UPDATE=no
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked -- --show-output 2>&1 | tee "$log"
passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s += $1} END {print s + 0}')
[ "$passed" -gt 0 ] || { echo "no test ran" >&2; exit 1; }
echo "tests: $passed passed, $failed failed"
