# Sourced by bench scripts. User + system seconds of a command, its output
# dropped: on shared cores CPU time is steadier than wall time (compare
# builds side by side all the same).
cpu_seconds() {
  local TIMEFORMAT='%U %S'
  { time "$@" > /dev/null 2>&1; } 2>&1 | awk '{printf "%.2f", $1 + $2}'
}
