#!/bin/bash
# Where rok writes: a device, a FIFO, a socket, a directory or a symbolic
# link at an output path is written through or refused, never replaced;
# write errors (standard output too) exit 1 naming the path; `-o DIR` is all
# or nothing; a signal during any writer leaves no temporary file and the
# previous contents.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
hw=a100-40g-pcie4-4xp5800x
cd "$tmp"

# A path that must be left as it was: same type, same inode.
same() { # PATH BEFORE
  local now
  now=$(stat -c '%F %i' "$1")
  [ "$now" = "$2" ] || { echo "$1 was replaced: $2 -> $now" >&2; exit 1; }
}

# Character devices: written through. /dev/full: the write error is exit 1.
"$rok" trace gpt3-1.3b -o /dev/null >/dev/null
[ -c /dev/null ] || { echo "/dev/null is no longer a device" >&2; exit 1; }
if [ -c /dev/full ]; then
  before=$(stat -c '%F %i' /dev/full)
  expect_fail 1 "cannot write /dev/full" "$rok" trace gpt3-1.3b -o /dev/full ">/dev/null"
  expect_fail 1 "cannot write /dev/full" "$rok" simulate gpt3-1.3b --hw $hw --strategy keep --timeline /dev/full \
    ">/dev/null"
  expect_fail 1 "cannot write /dev/full" "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 8 -o /dev/full
  same /dev/full "$before"
  # Standard output is checked at exit, as git does.
  expect_fail 1 "cannot write standard output" "$rok" trace gpt3-1.3b ">/dev/full"
fi

# A FIFO: written through when someone reads it, an error (not a hang) when not.
mkfifo fifo
before=$(stat -c '%F %i' fifo)
expect_fail 1 "cannot write fifo: no process reads it" timeout 20 "$rok" trace gpt3-1.3b -o fifo ">/dev/null"
cat fifo >fifo.out &
reader=$!
sleep 0.2
timeout 20 "$rok" trace gpt3-1.3b -o fifo >/dev/null
wait $reader
grep -q '"format": "rok-trace/1"' fifo.out
same fifo "$before"

# A socket, a directory: refused, left.
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' sock
before=$(stat -c '%F %i' sock)
expect_fail 1 "cannot write sock" "$rok" trace gpt3-1.3b -o sock ">/dev/null"
same sock "$before"
mkdir dir
expect_fail 1 "cannot write dir: it is a directory" "$rok" trace gpt3-1.3b -o dir ">/dev/null"
mkdir chart.png
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 8,16 -o sw >/dev/null
expect_fail 1 "cannot write chart.png: it is a directory" "$rok" plot sw/sweep.csv -o chart.png
[ -d chart.png ] && [ -z "$(ls -A chart.png)" ]

# Symbolic links: followed to a file (the link stays a link), refused when
# they lead nowhere.
echo old >target.json
ln -s target.json link.json
"$rok" trace gpt3-1.3b -o link.json >/dev/null
[ -L link.json ] || { echo "the link was replaced" >&2; exit 1; }
grep -q rok-trace/1 target.json
ln -s nowhere/x dangling.json
expect_fail 1 "symbolic link to nothing" "$rok" trace gpt3-1.3b -o dangling.json ">/dev/null"
[ -L dangling.json ] && [ ! -e nowhere ]
# A replaced regular file keeps its permissions.
echo x >mode.json
chmod 640 mode.json
"$rok" trace gpt3-1.3b -o mode.json >/dev/null
[ "$(stat -c %a mode.json)" = 640 ] || { echo "permissions of a replaced file changed" >&2; exit 1; }

# -o DIR, all or nothing: a name in the way is refused before anything moves;
# files of DIR that rok did not write stay.
"$rok" plan gpt3-1.3b --hw $hw --points 2 -o plan >/dev/null
touch plan/mine
rm plan/rok-curve.png && mkdir plan/rok-curve.png
sum=$(cat plan/*.json plan/*.csv plan/*.svg | md5sum)
expect_fail 1 "plan/rok-curve.png: it exists and is not a regular file" \
  "$rok" plan gpt3-2.7b --hw $hw --points 2 -o plan
[ "$(cat plan/*.json plan/*.csv plan/*.svg | md5sum)" = "$sum" ] || { echo "plan -o changed files on failure" >&2; exit 1; }
[ -e plan/mine ] && [ -d plan/rok-curve.png ]
rmdir plan/rok-curve.png
"$rok" plan gpt3-2.7b --hw $hw --points 2 -o plan >/dev/null
grep -q '"model": "gpt3-2.7b"' plan/plan.json && [ -f plan/rok-curve.png ] && [ -e plan/mine ]
ln -s plan planlink
"$rok" plan gpt3-1.3b --hw $hw --points 2 -o planlink >/dev/null
[ -L planlink ] && grep -q '"model": "gpt3-1.3b"' plan/plan.json
expect_fail 1 "cannot write target.json: it exists and is not a directory" \
  "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 8 -o target.json

# A signal during each -o writer: exit 1, the previous contents or the new,
# never a mix, and no temporary file or folder left.
leftovers() {
  find . -name '.*rok-new-*' -o -name '.*.json.*' -o -name '.*.png.*' -o -name '.*.svg.*' -o -name '.*.csv.*' |
    grep . && { echo "temporaries left" >&2; exit 1; } || true
}
interrupt() { # DELAY SIGNAL COMMAND...
  local delay=$1 sig=$2 status=0
  shift 2
  "$@" >/dev/null 2>"$tmp/stderr" &
  local pid=$!
  # The delay counts from when rok holds the signal (blocked for its
  # signalfd, or caught): one before that takes the default action, and how
  # long the loader takes depends on the build (ASan) and the load, not on rok.
  local bit=$(( 1 << ($(kill -l "$sig") - 1) )) held exe
  exe=$(readlink -f "$1")
  for _ in $(seq 1000); do
    # Until the command has replaced the shell that forked it, the masks
    # are the shell's (it blocks every signal around a fork).
    if [ "$(readlink /proc/$pid/exe 2>/dev/null)" != "$exe" ]; then
      kill -0 $pid 2>/dev/null || break
      sleep 0.01
      continue
    fi
    held=$(awk '/^Sig(Blk|Cgt):/ { printf "|0x%s", $2 }' /proc/$pid/status 2>/dev/null) || break
    [ -n "$held" ] || break
    (( (0 $held) & bit )) && break
    sleep 0.01
  done
  sleep "$delay"
  kill -s "$sig" $pid 2>/dev/null || true
  wait $pid || status=$?
  [ "$status" -le 1 ] || { echo "exit $status after $sig: $*" >&2; cat "$tmp/stderr" >&2; exit 1; }
  leftovers
}
for delay in 0.1 0.5 1.0; do
  for sig in INT TERM; do
    interrupt $delay $sig "$rok" plan gpt3-13b --hw $hw --points 3 -o plan
    (cd plan && [ "$(ls *.json *.csv *.png *.svg | wc -l)" -eq 5 ]) || { echo "plan -o DIR half written" >&2; exit 1; }
    interrupt $delay $sig "$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1:64:*2 -o sw
    [ "$(ls sw | wc -l)" -eq 5 ] || { echo "sweep -o DIR half written" >&2; exit 1; }
    interrupt $delay $sig "$rok" trace gpt3-175b -o big.json
    interrupt $delay $sig "$rok" simulate gpt3-13b --hw $hw --strategy offload --timeline tl.json
    interrupt $delay $sig "$rok" plot sw/sweep.csv -o chart.svg
  done
done
echo "output: all checks passed"
