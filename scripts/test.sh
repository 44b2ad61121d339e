#!/usr/bin/env bash
# The test command from the README: unit, property and integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo test --locked "$@"
