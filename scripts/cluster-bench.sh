#!/usr/bin/env bash
# make cluster-bench: the CPU-bound stages (updatedb, parse, linkdb) in one process and
# as Spark tasks on a local standalone cluster of 1 and of 2 one-core workers, on the
# same data, and Spark's own cost per task. Benchmarks measure; nothing is asserted.
#
# Data (under CLUSTER_BENCH_OUT, default bench-out/cluster, removed at the end):
# - updatedb and linkdb: CLUSTER_BENCH_URLS (default 10000000) seed URLs over urls/100
#   hosts injected (benchgen --seeds, inject), generate --top-n urls/10 --max-per-host
#   100, and a synthetic fetch and parse of that fetch list with 5 new outlinks a page
#   (fakefetch), as scalebench does;
# - parse: every URL of a test web of CLUSTER_BENCH_HOSTS (default 300) hosts x 100
#   pages injected, generated and fetched from the local test web on loopback (delay 0).
# Every run works on a fresh hard-linked copy of that crawl. CLUSTER_BENCH_STAGES (default
# "updatedb parse linkdb") chooses the stages.
#
# Equal cores: one process with crawl.threads = 1 against Spark with 1 worker, one
# process with 2 threads against Spark with 2 workers (each task's binary runs with 1
# thread on its one-core worker). Spark runs CLUSTER_BENCH_TASKS tasks a stage (default:
# one per partition, crawl.partitions = 4: large partitions, about 3.7M crawldb URLs each after the update) plus the commit in the driver; its wall time
# counts from the first task's start to the commit's end (the application's start, a
# one-time cost of a spark-submit, is listed apart). The per-task overhead is a job of
# no-op tasks (`true` instead of a stage binary) divided by the tasks each worker ran.
set -euo pipefail
BIN=${BIN:-target/release}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${CLUSTER_BENCH_OUT:-bench-out/cluster}
URLS=${CLUSTER_BENCH_URLS:-10000000}
HOSTS=${CLUSTER_BENCH_HOSTS:-300}
PARTITIONS=${CLUSTER_BENCH_PARTITIONS:-4}
TASKS=${CLUSTER_BENCH_TASKS:-$PARTITIONS}
REPEAT=${CLUSTER_BENCH_REPEAT:-1}
STAGES=${CLUSTER_BENCH_STAGES:-updatedb parse linkdb}

rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$(cd "$BIN" && pwd)
RESULTS=$OUT/results.jsonl
web=
cleanup() {
  cluster/spark-local.sh stop "$OUT/spark" >/dev/null 2>&1 || true
  if [ -n "$web" ]; then kill "$web" 2>/dev/null || true; wait "$web" 2>/dev/null || true; fi
  rm -rf "$OUT/data" "$OUT/copies"
}
trap cleanup EXIT
echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${CLUSTER_BENCH_OVERHEAD_ONLY:-0}" = 1 ]; then
  # make bench's line: Spark's cost per task on a 2-worker cluster, no stage runs.
  printf '[crawl]\npartitions = %s\nthreads = 1\n' "$PARTITIONS" >"$OUT/threads1.toml"
  export SPARK_LOCAL_IP=127.0.0.1 SPARK_CONF_DIR=$PWD/cluster/conf PYSPARK_PYTHON=$PWD/$PYTHON
  PYTHON=$PYTHON cluster/spark-local.sh start "$OUT/spark" 2 >/dev/null
  "$(dirname "$PYTHON")/spark-submit" --master "$(cat "$OUT/spark/master.url")" cluster/bench_cluster.py \
    --workers 2 --bin-dir "$BIN" --config "$OUT/threads1.toml" --results "$RESULTS" --copies "$OUT/copies" \
    --tasks "$TASKS" 2>&1 | grep '^bench_cluster:'
  exit 0
fi

# Configurations: 1 and 2 threads per process.
for t in 1 2; do
  printf '[crawl]\npartitions = %s\nthreads = %s\n' "$PARTITIONS" "$t" >"$OUT/threads$t.toml"
done
secs() { date +%s.%N; }

echo "== preparing: $URLS seed URLs injected, $((URLS / 10)) generated, a synthetic fetch and parse (5 outlinks a page)"
data=$OUT/data
mkdir -p "$data"
big=$data/big
"$BIN/benchgen" --seeds "$URLS" --out "$data/seeds.txt" >/dev/null
"$BIN/inject" --crawl-dir "$big" --config "$OUT/threads2.toml" "$data/seeds.txt" 2>&1 | tail -1
big_segment=$("$BIN/generate" --crawl-dir "$big" --config "$OUT/threads2.toml" --top-n $((URLS / 10)) --max-per-host 100 2>/dev/null | tail -1)
"$BIN/fakefetch" --crawl-dir "$big" --config "$OUT/threads2.toml" --segment "$big_segment" --outlinks 5 2>&1 | tail -1
big_segment=$(basename "$big_segment")
rm -f "$data/seeds.txt"

pages= pages_segment=
if [[ " $STAGES " == *" parse "* ]]; then
  echo "== preparing: the test web's $HOSTS hosts x 100 pages fetched from loopback (for parse)"
  WEB_FLAGS="--seed 3 --hosts $HOSTS --pages 100"
  "$BIN/testweb" serve --addr 127.0.0.1:0 $WEB_FLAGS --addr-file "$data/testweb.addr" >/dev/null &
  web=$!
  for _ in $(seq 100); do [ -s "$data/testweb.addr" ] && break; sleep 0.1; done
  printf '[crawl]\npartitions = %s\n\n[fetch]\ndelay = 0.0\nmax_connections = 512\n\n[fetch.resolve]\n"*.web.test" = "%s"\n' \
    "$PARTITIONS" "$(cat "$data/testweb.addr")" >"$data/fetch.toml"
  "$BIN/testweb" sitemap $WEB_FLAGS --out "$data/sitemap.json"
  "$PYTHON" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["urls"]))' "$data/sitemap.json" >"$data/web-seeds.txt"
  pages=$data/pages
  "$BIN/inject" --crawl-dir "$pages" --config "$data/fetch.toml" "$data/web-seeds.txt" 2>&1 | tail -1
  pages_segment=$("$BIN/generate" --crawl-dir "$pages" --config "$data/fetch.toml" --top-n 10000000 --max-per-host 100000 2>/dev/null | tail -1)
  RUST_LOG=warn "$BIN/fetch" --crawl-dir "$pages" --config "$data/fetch.toml" "$pages_segment" 2>&1 | tail -1
  kill "$web"; wait "$web" 2>/dev/null || true; web=
  pages_segment=$(basename "$pages_segment")
fi

# One process, 1 and 2 threads: each stage on a fresh copy of its crawl.
mkdir -p "$OUT/copies"
one_process() {
  local t=$1 stage=$2 crawl=$3 segment=$4 best= s e
  for _ in $(seq "$REPEAT"); do
    rm -rf "$OUT/copies/one"
    cp -al "$crawl" "$OUT/copies/one"
    s=$(secs)
    RUST_LOG=warn "$BIN/$stage" --crawl-dir "$OUT/copies/one" --config "$OUT/threads$t.toml" \
      "$OUT/copies/one/segments/$segment" 2>&1 | tail -1
    e=$(secs)
    best=$("$PYTHON" -c "import sys; a = float(sys.argv[1]) - float(sys.argv[2]); b = sys.argv[3]; print(min(a, float(b)) if b else a)" "$e" "$s" "$best")
  done
  rm -rf "$OUT/copies/one"
  echo "{\"mode\": \"one-$t\", \"stage\": \"$stage\", \"seconds\": $best, \"tasks\": 0}" >>"$RESULTS"
}
# The crawl and segment each stage works on.
runs=()
for stage in $STAGES; do
  case $stage in
    updatedb | linkdb) runs+=("$stage=$big:$big_segment") ;;
    parse) runs+=("$stage=$pages:$pages_segment") ;;
    *) echo "cluster-bench: no data for stage $stage (updatedb, parse, linkdb)" >&2; exit 2 ;;
  esac
done
for t in 1 2; do
  echo "== one process, crawl.threads = $t"
  for run in "${runs[@]}"; do
    stage=${run%%=*}
    rest=${run#*=}
    one_process "$t" "$stage" "${rest%%:*}" "${rest#*:}"
  done
done

export SPARK_LOCAL_IP=127.0.0.1 SPARK_CONF_DIR=$PWD/cluster/conf PYSPARK_PYTHON=$PWD/$PYTHON RUST_LOG=warn
for w in 1 2; do
  echo "== Spark standalone, $w one-core worker(s), $TASKS tasks a stage (crawl.threads = 1 in each task)"
  PYTHON=$PYTHON cluster/spark-local.sh start "$OUT/spark" "$w"
  "$(dirname "$PYTHON")/spark-submit" --master "$(cat "$OUT/spark/master.url")" cluster/bench_cluster.py \
    --workers "$w" --bin-dir "$BIN" --config "$OUT/threads1.toml" --results "$RESULTS" \
    --copies "$OUT/copies" --tasks "$TASKS" --repeat "$REPEAT" \
    "${runs[@]}"
  cluster/spark-local.sh stop "$OUT/spark"
done

echo
echo "== wall times (s); spark/one = the cluster path's cost against one process at equal cores"
"$PYTHON" - "$RESULTS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t = {(r["mode"], r["stage"]): r["seconds"] for r in rows}
print(f"{'stage':<10} {'1 process, 1 thread':>20} {'Spark 1 worker':>15} {'ratio':>7}   {'1 process, 2 threads':>21} {'Spark 2 workers':>16} {'ratio':>7}")
for stage in ["updatedb", "parse", "linkdb"]:
    cells = []
    for one, spark in [("one-1", "spark-1w"), ("one-2", "spark-2w")]:
        a, b = t.get((one, stage)), t.get((spark, stage))
        cells.append((a, b, b / a if a and b else None))
    fmt = lambda x, w: f"{x:>{w}.2f}" if x is not None else f"{'-':>{w}}"
    print(f"{stage:<10} {fmt(cells[0][0], 20)} {fmt(cells[0][1], 15)} {fmt(cells[0][2], 7)}   "
          f"{fmt(cells[1][0], 21)} {fmt(cells[1][1], 16)} {fmt(cells[1][2], 7)}")
for w in (1, 2):
    m = f"spark-{w}w"
    if (m, "(per task)") in t:
        print(f"Spark, {w} worker(s): application start {t[(m, '(app start)')]:.1f}s (once per spark-submit); "
              f"a job of no-op tasks {t[(m, '(no-op job)')]:.3f}s, {1000 * t[(m, '(per task)')]:.0f} ms a task")
EOF
echo "cluster-bench: figures in $RESULTS"
