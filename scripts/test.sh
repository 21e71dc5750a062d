#!/usr/bin/env bash
# Sets up (idempotent) and runs the whole test suite: formatting, clippy with -D warnings,
# and every test of the workspace (snapshots are checked, never written: INSTA_UPDATE=no).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export INSTA_UPDATE=no
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
