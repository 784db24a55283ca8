#!/usr/bin/env bash
# make demo: start the local test web on loopback, crawl its seeds for ROUNDS rounds (crawl),
# print what was crawled (readdb stats, the ten top pages by PageRank, a search), stop the web.
#
# DEMO_DIR (default: crawl) is wiped first, but only if an earlier demo made it.
set -euo pipefail
BIN=${BIN:-target/release}
DIR=${DEMO_DIR:-${TRAWL_CRAWL_DIR:-crawl}}
ROUNDS=${ROUNDS:-3}
CONFIG=${TRAWL_CONFIG:-data/trawl.toml}
ADDR=${DEMO_ADDR:-127.0.0.1:18080}
WEB_FLAGS=${WEB_FLAGS:---seed 42 --hosts 20 --pages 40 --sitemaps}
export TRAWL_CRAWL_DIR="$DIR" TRAWL_CONFIG="$CONFIG"

if [ -e "$DIR" ] && [ ! -f "$DIR/.trawl-demo" ]; then
  echo "demo: $DIR exists and was not made by make demo; move it away or set DEMO_DIR" >&2
  exit 1
fi
rm -rf "$DIR"
mkdir -p "$DIR"
touch "$DIR/.trawl-demo"
start=$(date +%s)

"$BIN/testweb" serve --addr "$ADDR" $WEB_FLAGS --log "$DIR/testweb.log" --addr-file "$DIR/testweb.addr" &
web=$!
trap 'kill $web 2>/dev/null; wait $web 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$DIR/testweb.addr" ] && break; sleep 0.1; done
[ -s "$DIR/testweb.addr" ] || { echo "demo: the test web did not start on $ADDR" >&2; exit 1; }
echo "demo: test web serving at $(cat "$DIR/testweb.addr") ($WEB_FLAGS)"

"$BIN/testweb" seeds $WEB_FLAGS --out "$DIR/seeds.txt"
# The crawl driver: inject, then ROUNDS rounds of every stage (generate, fetch, parse,
# updatedb, linkdb, dedup, pagerank, sitemap, index), stopping early when nothing is due.
"$BIN/crawl" --seeds "$DIR/seeds.txt" --rounds "$ROUNDS" --size-fetchlist 2000 \
  --set fetch.delay=0.05 --set "fetch.resolve.*.web.test=$ADDR"
echo
echo "== crawldb statistics (readdb --stats)"
"$BIN/readdb" --stats
echo
# Every round's pagerank sets each crawldb score to PageRank x N (every known page is in
# the graph; scores average 1.0), so the best scores are the best PageRanks. URLs the
# last sitemap step added carry their <priority> (at most 1.0, an average page).
echo "== the ten top pages by PageRank (readdb --top 10; score = PageRank x pages, 1.0 = average)"
"$BIN/readdb" --top 10
echo
# Every round ended with `index`: the crawl is searchable.
echo "== search the demo crawl (search --top 5 'river signal'; docs/search.md)"
"$BIN/search" --top 5 "river signal"
echo
echo "demo: $ROUNDS rounds in $(( $(date +%s) - start )) s; crawl in $DIR/ (query it with DuckDB, see README)"
