# Sourced by bench scripts. Wall and CPU seconds of a command, its output
# dropped ("W s wall, C s CPU"): wall time is what a user waits for where
# work is shared out among threads; on shared cores CPU time is the
# steadier figure (compare builds side by side all the same).
wall_cpu_seconds() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" > /dev/null 2>&1; } 2>&1 | awk '{printf "%.2f s wall, %.2f s CPU", $1, $2 + $3}'
}
