#!/usr/bin/env bash
# make bench: every benchmark, printing its figures (wall time, rates, peak RSS).
# Benchmarks measure; tests never assert timings. BENCH_SIZES (default "1000000 10000000")
# lists the crawldb sizes for updatedb/generate and the blake3 check of the crawldb's
# parts (docs/integrity.md), e.g. BENCH_SIZES="1000000 10000000 30000000"
# (30M: about 200 MB of Parquet under bench-out/, removed after its run).
# GRAPH_SIZES (default "1000000") lists the page counts of the PageRank graphs (10
# links per page), e.g. GRAPH_SIZES="1000000 10000000" (10M pages: ~2.2 GB RAM,
# ~0.8 GB of Parquet in $BENCH_OUT, several minutes).
# SCALE_SIZES (default "1000000") lists the seed counts of the scale pipeline
# (scalebench: inject N, generate min(1M, N/10), a synthetic fetch with 5 new outlinks
# a page, updatedb, linkdb, then pagerank and dedup --near each in one process and as
# partition tasks; each a fresh process) with inject and generate
# against DuckDB (2 threads, $PYTHON: the virtualenv `make bench` creates), e.g.
# SCALE_SIZES="10000000 30000000 100000000" (100M: a 3.5 GB seed file and a few GB of
# crawl under $BENCH_OUT; docs/crawldb.md, "At scale").
# SCALE_TASKS=N also runs the whole scale pipeline again as partition tasks over N
# partition sets (inject, generate, updatedb, linkdb, pagerank, dedup: jobs of tasks,
# each task and driver step a fresh process; the largest task's and driver step's peak
# RSS), and SCALE_CONFIG=FILE passes a config to every stage (e.g. partitions = 64 for
# the 100M run as tasks; docs/cluster.md).
# WCXB names a copy of the WCXB benchmark (git clone
# https://github.com/Murrough-Foley/web-content-extraction-benchmark) for the main-text
# benchmark's second public set; without it that set is skipped with a message.
# TRAFILATURA names a clone of https://github.com/adbar/trafilatura: its evaluation pages
# (snippets that must and must not be in the main text) are reported as a tuning set.
# SEARCH_PAGES (default 100000) is the size of the synthetic index the query latency
# is measured on (docs/search.md).
set -euo pipefail
BIN=${BIN:-target/release}
OUT=${BENCH_OUT:-bench-out}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "== fetch: throughput (1000 hosts x 100 pages, delay 0, one connection per host),"
echo "   the same over HTTPS (TLS, keep-alive: one handshake per host),"
echo "   then politeness (1000 hosts x 10 pages, delay 1 s: achieved rate vs the bound H/d)"
"$BIN/fetchbench" --hosts 1000 --pages 100 --https --polite-hosts 1000 --polite-pages 10 --delay 1

echo
echo "== parse: MB/s of HTML (links + text + main text + signatures) on the corpus pages,"
echo "   the test web's own pages (300 hosts) and generated link-heavy pages"
"$BIN/parsebench"

for n in ${BENCH_SIZES:-1000000 10000000}; do
  echo
  echo "== crawldb: updatedb and generate on $n URLs ($((n / 100)) hosts, 10% fetched, 5 outlinks each),"
  echo "   and the blake3 check of the crawldb's parts every crawldb rewrite starts with (verify; checksums: its share of updatedb)"
  rm -rf "$OUT/crawldb-$n"
  "$BIN/benchgen" --crawl-dir "$OUT/crawldb-$n" --urls "$n"
  "$BIN/bench" --crawl-dir "$OUT/crawldb-$n" --top-n $((n / 10)) --max-per-host 100
  rm -rf "$OUT/crawldb-$n"
done

for n in ${GRAPH_SIZES:-1000000}; do
  echo
  echo "== graph: PageRank on $n pages / $((n * 10)) links"
  rm -rf "$OUT/graph-$n"
  "$BIN/graphbench" --pages "$n" --links $((n * 10)) --dir "$OUT/graph-$n"
  rm -rf "$OUT/graph-$n"
done

for n in ${SCALE_SIZES:-1000000}; do
  echo
  echo "== scale: inject $n seed URLs ($((n / 100)) hosts), generate, a synthetic fetch (5 new outlinks a page), updatedb,"
  echo "   linkdb, pagerank, dedup --near (one process, then as partition tasks), each in a fresh process (wall, peak RSS, disk); inject and generate against DuckDB (2 threads)"
  rm -rf "$OUT/scale-$n"
  extra=()
  if [ -n "${SCALE_TASKS:-}" ]; then extra+=(--tasks "$SCALE_TASKS"); fi
  if [ -n "${SCALE_CONFIG:-}" ]; then extra+=(--config "$SCALE_CONFIG"); fi
  if [ -x "$PYTHON" ]; then
    "$BIN/scalebench" --dir "$OUT/scale-$n" --urls "$n" --python "$PYTHON" --duckdb-script scripts/bench_duckdb.py "${extra[@]}"
  else
    echo "   ($PYTHON not found: no DuckDB comparison; \`make bench\` creates it)"
    "$BIN/scalebench" --dir "$OUT/scale-$n" --urls "$n" "${extra[@]}"
  fi
  rm -rf "$OUT/scale-$n"
done

echo
echo "== documents: PDF text through parse's docparse helper against poppler's pdftotext (token recall"
echo "   and precision, MB/s) on the PDFs Debian's documentation packages ship"
PDFS="$OUT/debian-pdfs"
DEBS="r-doc-pdf gnuplot-doc asymptote-doc debian-reference-en xorg-docs"
if [ ! -d "$PDFS" ] && command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  rm -rf "$OUT/debs" && mkdir -p "$OUT/debs" "$PDFS.tmp"
  if (cd "$OUT/debs" && apt-get download -qq $DEBS 2>/dev/null); then
    for d in "$OUT"/debs/*.deb; do dpkg-deb -x "$d" "$PDFS.tmp"; done
    find "$PDFS.tmp" -name '*.pdf.gz' -exec gunzip -f {} +
    mv "$PDFS.tmp" "$PDFS"
  fi
  rm -rf "$OUT/debs" "$PDFS.tmp"
fi
if ! command -v pdftotext >/dev/null; then
  echo "   (skipped: pdftotext is missing; make bench installs poppler-utils when it runs as root)"
elif [ ! -d "$PDFS" ]; then
  echo "   (skipped: could not download $DEBS with apt-get)"
else
  "$BIN/docbench" --pdf-dir "$PDFS"
fi

echo
echo "== main text: 4-gram shingle precision / recall / F1 of parse_text.main_text beside trafilatura and"
echo "   readability-lxml on the Zyte article extraction benchmark (181 pages vendored in bench/data; ids 8-f held"
echo "   out of tuning), WCXB when WCXB=DIR names a copy (its test split held out) and the shared Readability pages"
WCXB=${WCXB:-${TRAWL_WCXB:-}}
"$PYTHON" bench/peers/extract.py --out "$OUT/article-peers.json" ${WCXB:+--wcxb "$WCXB"} \
  --corpora "${TRAWL_CORPORA:-../shared/corpora}"
TRAFILATURA=${TRAFILATURA:-${TRAWL_TRAFILATURA:-}}
"$BIN/articlebench" --peers "$OUT/article-peers.json" ${WCXB:+--wcxb "$WCXB"} \
  ${TRAFILATURA:+--trafilatura "$TRAFILATURA"}

echo
echo "== rendering: pages/s of fetch with [fetch.render] (headless Chromium, 1/2/4 tabs) beside fetch without it"
echo "   and beside chromium --dump-dom (a process per page), on the test web's pages and its scripted hosts"
"$BIN/renderbench" --dir "$OUT/renderbench"

echo
echo "== search relevance: the Rust book (rust-docs) crawled from the test web as book.web.test, its h2/h3 headings"
echo "   as queries (title field weighted 0), ranking weights tuned on half, MRR@10 / nDCG@10 on both halves"
"$BIN/relbench" --dir "$OUT/relbench"

echo
echo "== search relevance on more sites, nothing tuned: BM25 against the shipped ranking on every heading query"
echo "   and on natural queries written for the site (bench/queries/) of Python's documentation (second tuning"
echo "   site) and the PostgreSQL manual (held out); make docsites installs them"
for spec in /usr/share/doc/python3.11-doc/html:bench/queries/python-3.11.tsv \
            /usr/share/doc/postgresql-doc-15/html:bench/queries/postgresql-15.tsv; do
  site=${spec%%:*}
  if [ -f "$site/index.html" ]; then
    "$BIN/relbench" --no-tune --site "$site" --queries "${spec#*:}" --dir "$OUT/relbench-$(basename "$(dirname "$site")")"
  else
    echo "relbench: skipped $site: not installed (make docsites)"
  fi
done

echo
echo "== search throughput and latency: index the parse benchmark's pages (corpus + test web) and"
echo "   ${SEARCH_PAGES:-100000} synthetic pages; 1000 mixed queries (one word, two words, phrase, site:) on the latter"
"$BIN/searchbench" --dir "$OUT/searchbench" --pages "${SEARCH_PAGES:-100000}"

echo
echo "== Spark: the per-task cost of a Spark job on a local standalone cluster (2 one-core workers on 127.0.0.1)"
echo "   (the stages themselves, one process against Spark on 1 and 2 workers: make cluster-bench)"
if command -v java >/dev/null && "$PYTHON" -c "import pyspark" 2>/dev/null; then
  CLUSTER_BENCH_OVERHEAD_ONLY=1 CLUSTER_BENCH_OUT="$OUT/cluster" PYTHON=$PYTHON BIN=$BIN scripts/cluster-bench.sh
else
  echo "   (skipped: needs java and pyspark in $PYTHON: make cluster-venv)"
fi
