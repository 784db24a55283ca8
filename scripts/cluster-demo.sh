#!/usr/bin/env bash
# make cluster-demo: trawl on a Spark standalone cluster on this machine.
#
# Starts the local test web on a free loopback port and a Spark master with WORKERS
# (default 2) one-core workers on 127.0.0.1 (cluster/spark-local.sh), injects the
# web's seeds and runs ROUNDS (default 3) rounds through Spark (cluster/trawl_spark.py:
# every stage a Spark job of partition tasks running trawl's binaries, then its
# commit), prints what was crawled (readdb --stats), then crawls the same web with
# `crawl` in one process (the same round: the Spark driver runs `trawl plan round`) and
# shows that both crawldbs hold the same URLs with the same status and signature
# (cluster/compare_crawldb.py).
# The cluster and the web are stopped at the end, also when a step fails.
#
# CLUSTER_DEMO_DIR (default: crawl-cluster) is wiped first, but only if an earlier
# cluster demo made it; it keeps both crawls, the config, the web's request log and
# the cluster's logs (spark/logs, spark/work).
set -euo pipefail
BIN=${BIN:-target/release}
PYTHON=${PYTHON:-.venv/bin/python}
DIR=${CLUSTER_DEMO_DIR:-crawl-cluster}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-2}
WEB_FLAGS=${WEB_FLAGS:---seed 42 --hosts 20 --pages 40}
TOP_N=${TOP_N:-2000}
DELAY=${DELAY:-0.05}

if [ -e "$DIR" ] && [ ! -f "$DIR/.trawl-demo" ]; then
  echo "cluster-demo: $DIR exists and was not made by make cluster-demo; move it away or set CLUSTER_DEMO_DIR" >&2
  exit 1
fi
if [ -f "$DIR/spark/pids" ]; then
  cluster/spark-local.sh stop "$DIR/spark"  # a cluster an interrupted demo left running
fi
rm -rf "$DIR"
mkdir -p "$DIR"
touch "$DIR/.trawl-demo"
DIR=$(cd "$DIR" && pwd)
start=$(date +%s)

web=
cleanup() {
  cluster/spark-local.sh stop "$DIR/spark" || true
  if [ -n "$web" ]; then
    kill "$web" 2>/dev/null || true
    wait "$web" 2>/dev/null || true
  fi
}
trap cleanup EXIT

"$BIN/testweb" serve --addr 127.0.0.1:0 $WEB_FLAGS --log "$DIR/testweb.log" --addr-file "$DIR/testweb.addr" >/dev/null &
web=$!
for _ in $(seq 100); do [ -s "$DIR/testweb.addr" ] && break; sleep 0.1; done
[ -s "$DIR/testweb.addr" ] || { echo "cluster-demo: the test web did not start" >&2; exit 1; }
addr=$(cat "$DIR/testweb.addr")
echo "cluster-demo: test web serving at $addr ($WEB_FLAGS)"
# data/trawl.toml with the test web's hosts mapped to this server.
sed "s|^\"\\*\\.web\\.test\" = .*|\"*.web.test\" = \"$addr\"|" data/trawl.toml >"$DIR/trawl.toml"
grep -q "\"$addr\"" "$DIR/trawl.toml" || { echo "cluster-demo: no [fetch.resolve] line for *.web.test in data/trawl.toml" >&2; exit 1; }
CONFIG=$DIR/trawl.toml
"$BIN/testweb" seeds $WEB_FLAGS --out "$DIR/seeds.txt"

PYTHON=$PYTHON cluster/spark-local.sh start "$DIR/spark" "$WORKERS"
master=$(cat "$DIR/spark/master.url")
export SPARK_LOCAL_IP=127.0.0.1 SPARK_CONF_DIR=$PWD/cluster/conf PYSPARK_PYTHON=$PWD/$PYTHON
submit() {
  "$(dirname "$PYTHON")/spark-submit" --master "$master" cluster/trawl_spark.py "$@" \
    --crawl-dir "$DIR/spark-crawl" --config "$CONFIG" --bin-dir "$BIN"
}

echo
echo "== inject through Spark"
submit inject "$DIR/seeds.txt"
echo
echo "== $ROUNDS rounds through Spark"
# While the rounds run, every second: the listening sockets of the cluster (master,
# workers, executors, Python workers) and of the driver.
submit round --rounds "$ROUNDS" --top-n "$TOP_N" --fetch-flags "--delay $DELAY" &
driver=$!
(
  while kill -0 "$driver" 2>/dev/null; do
    cluster/spark-local.sh sockets "$DIR/spark" "$driver" >>"$DIR/sockets.txt" 2>&1 || true
    sleep 1
  done
) &
sampler=$!
rc=0
wait "$driver" || rc=$?
wait "$sampler" || true
if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then  # 3: nothing was due any more (docs/exit-codes.md)
  echo "cluster-demo: the Spark rounds failed with exit code $rc" >&2
  exit "$rc"
fi
echo
echo "== the sockets the cluster and the driver listened on during the rounds (sampled every second)"
awk '{print $1, $2}' "$DIR/sockets.txt" | sort -u | awk '{print "  " $0}'
if grep -q "beyond loopback" "$DIR/sockets.txt"; then
  echo "cluster-demo: a Spark process listened beyond loopback (see $DIR/sockets.txt)" >&2
  exit 1
fi
cluster/spark-local.sh stop "$DIR/spark"

echo
echo "== crawled through Spark: crawldb statistics (readdb --stats)"
"$BIN/readdb" --crawl-dir "$DIR/spark-crawl" --config "$CONFIG" --stats

echo
echo "== the same crawl by \`crawl\` in one process (the round trawl_spark.py ran: trawl plan round)"
one=$DIR/local-crawl
"$BIN/crawl" --crawl-dir "$one" --config "$CONFIG" --seeds "$DIR/seeds.txt" --rounds "$ROUNDS" \
  --size-fetchlist "$TOP_N" --set "fetch.delay=$DELAY"

echo
echo "== the two crawldbs, by URL, status and signature"
"$PYTHON" cluster/compare_crawldb.py --bin-dir "$BIN" --config "$CONFIG" "$DIR/spark-crawl" "$one"
echo
echo "cluster-demo: done in $(( $(date +%s) - start )) s; crawls, config, request log and cluster logs in $DIR/"
