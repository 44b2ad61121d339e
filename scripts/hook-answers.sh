#!/usr/bin/env bash
# Regenerates tests/fixtures/hooks/*.answer.json from the payloads with the
# outbox built in target/debug. Review the diff: the answers are the
# contract each agent's documentation defines.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q
ob=$(readlink -f target/debug/outbox)
for f in tests/fixtures/hooks/*.payload.json; do
  case=${f%.payload.json}
  agent=$(basename "$case"); agent=${agent%%.*}
  "$ob" hook "$agent" < "$f" | sed "s|$ob|@OUTBOX@|g" > "$case.answer.json"
done
