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
# The public crates' API docs build without a warning (broken links, missing docs on the
# facade and the runtime: `#![warn(missing_docs)]`).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -p tilec -p tilec-runtime -p tilec-core
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked -- --show-output 2>&1 | tee "$log"
# The Python package: its wheel built as a user builds it (maturin), installed into
# target/python, and its CPU tests (unittest prints "Ran N tests" and "OK").
rm -rf target/wheels target/python
python3 -m maturin build --quiet -m python/Cargo.toml --profile dev -o target/wheels
python3 -m pip install -q --disable-pip-version-check --no-deps --target target/python target/wheels/tilec-*.whl
PYTHONPATH=target/python python3 -m unittest discover -s tests/python -v 2>&1 | tee -a "$log"
grep -q '^OK' "$log" || { echo "the Python package's tests failed" >&2; exit 1; }
pyran=$(grep -Eo '^Ran [0-9]+ tests' "$log" | awk '{s += $2} END {print s + 0}')
echo "test result: ok. $pyran passed (Python package)" >> "$log"
passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s += $1} END {print s + 0}')
[ "$passed" -gt 0 ] || { echo "no test ran" >&2; exit 1; }
echo "tests: $passed passed, $failed failed"
