#!/bin/bash
# The figures README.md quotes equal what rok prints today: every output
# block and every number in a sentence that scripts/readme-figures.py lists
# (it says how each is computed; `--update` rewrites README.md). The plain
# build's check: under the sanitizers the commands are cli/plan's and the
# others'.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
root=$(cd "$(dirname "$0")/../.." && pwd)
if sanitized; then echo "sanitizer build: README's figures are checked in the plain build"; exit 77; fi
require_python
"$python" "$root/scripts/readme-figures.py" --check --rok "$rok" --readme "$root/README.md"
