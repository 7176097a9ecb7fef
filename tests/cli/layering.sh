#!/bin/bash
# The module graph is written twice, in CMakeLists.txt (the build reads it)
# and in docs/architecture.md (people read it): the two must agree. And no
# source names a header by a path into another module's folder: private
# headers are included by file name alone, public ones as "rok/NAME.h".
set -euo pipefail
root=${ROK_SOURCE_DIR:-$(dirname "$0")/../..}
cd "$root"
build=$(sed -n '/^set(ROK_LAYERS/,/)/p' CMakeLists.txt | grep -o '"[a-z]*:[a-z,]*"' | tr -d '"' |
  awk -F: '{gsub(",", " ", $2); print $1 ": " $2}')
docs=$(sed -n '/<!-- layers: begin/,/<!-- layers: end/p' docs/architecture.md | grep -E '^[a-z]+ +->' |
  awk -F'->' '{m=$1; gsub(/ /, "", m); split($2, w, "  "); d=w[1]; gsub(/,/, "", d); gsub(/^ +| +$/, "", d); print m ": " d}')
if [ "$build" != "$docs" ]; then
  echo "docs/architecture.md and CMakeLists.txt (ROK_LAYERS) disagree:" >&2
  diff <(echo "$build") <(echo "$docs") >&2 || true
  exit 1
fi
bad=$(grep -rnE '#include "[^"]*/' src | grep -vE '#include "rok/[a-z]+\.h"' || true)
if [ -n "$bad" ]; then
  echo "includes by path into a module's folder (include private headers by name, public ones as rok/NAME.h):" >&2
  echo "$bad" >&2
  exit 1
fi
for h in include/rok/*.h; do
  m=$(basename "$h" .h)
  [ -d "src/$m" ] || { echo "include/rok/$m.h has no module folder src/$m" >&2; exit 1; }
done
echo "layering: $(echo "$build" | wc -l) modules, docs and build agree"
