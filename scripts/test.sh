#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite. Ends with
# one plain line "N passed, N failed, N skipped"; exits non-zero on failure.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
bash scripts/build.sh || exit 1
meson test -C build --print-errorlogs
status=$?
python3 - <<'PY'
import json
results = [json.loads(line) for line in open("build/meson-logs/testlog.json")]
passed = sum(r["result"] in ("OK", "EXPECTEDFAIL") for r in results)
skipped = sum(r["result"] == "SKIP" for r in results)
print(f"{passed} passed, {len(results) - passed - skipped} failed, {skipped} skipped")
PY
exit $status
