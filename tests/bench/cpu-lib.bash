# Sourced by bench scripts. User + system seconds of a command, its output
# dropped: on shared cores CPU time is steadier than wall time (compare
# builds side by side all the same).
cpu_seconds() {
  local TIMEFORMAT='%U %S'
  { time "$@" > /dev/null 2>&1; } 2>&1 | awk '{printf "%.2f", $1 + $2}'
}

# Wall and CPU seconds of a command, its output dropped ("W s wall, C s
# CPU"): for work shared out among threads, where wall time is the figure
# a user waits for.
wall_cpu_seconds() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" > /dev/null 2>&1; } 2>&1 | awk '{printf "%.2f s wall, %.2f s CPU", $1, $2 + $3}'
}
