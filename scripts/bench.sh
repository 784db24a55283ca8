#!/usr/bin/env bash
# make bench: every benchmark, printing its figures (wall time, rates, peak RSS).
# Benchmarks measure; tests never assert timings. BENCH_SIZES (default "1000000")
# lists the crawldb sizes for updatedb/generate, e.g. BENCH_SIZES="1000000 10000000 30000000"
# (30M: about 200 MB of Parquet under bench-out/, removed after its run).
set -euo pipefail
BIN=${BIN:-target/release}
OUT=${BENCH_OUT:-bench-out}
mkdir -p "$OUT"
echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== fetch: throughput (1000 hosts x 100 pages, delay 0, one connection per host),"
echo "   then politeness (1000 hosts x 10 pages, delay 1 s: achieved rate vs the bound H/d)"
"$BIN/fetchbench" --hosts 1000 --pages 100 --polite-hosts 1000 --polite-pages 10 --delay 1

echo
echo "== parse: MB/s of HTML (links + text + main text + signatures)"
"$BIN/parsebench"

for n in ${BENCH_SIZES:-1000000}; do
  echo
  echo "== crawldb: updatedb and generate on $n URLs ($((n / 100)) hosts, 10% fetched, 5 outlinks each)"
  rm -rf "$OUT/crawldb-$n"
  "$BIN/benchgen" --crawl-dir "$OUT/crawldb-$n" --urls "$n"
  "$BIN/bench" --crawl-dir "$OUT/crawldb-$n" --top-n $((n / 10)) --max-per-host 100
  rm -rf "$OUT/crawldb-$n"
done

echo
echo "== graph: PageRank on 1M pages / 10M links"
"$BIN/graphbench" --pages 1000000 --links 10000000
