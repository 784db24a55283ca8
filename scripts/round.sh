#!/usr/bin/env bash
# One crawl round: generate -> fetch -> parse -> updatedb -> linkdb -> pagerank -> sitemap.
# Uses TRAWL_CRAWL_DIR and TRAWL_CONFIG (set by the Makefile); extra stage flags via
# GENERATE_FLAGS, FETCH_FLAGS, SITEMAP_FLAGS. When generate finds nothing due, only the
# sitemap step runs (new or due sitemaps may bring new URLs for the next round).
set -euo pipefail
BIN=${BIN:-target/release}
# Every stage takes extra flags from its own variable: PARSE_FLAGS, UPDATEDB_FLAGS,
# LINKDB_FLAGS and PAGERANK_FLAGS too (e.g. PAGERANK_FLAGS="--max-iterations 300").

set +e
segment=$("$BIN/generate" ${GENERATE_FLAGS:-})
rc=$?
set -e
if [ "$rc" -eq 3 ]; then  # exit code 3: nothing due (docs/exit-codes.md)
  echo "round: no URLs are due; checking sitemaps only" >&2
  "$BIN/sitemap" ${SITEMAP_FLAGS:-}
  exit 0
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
"$BIN/fetch" ${FETCH_FLAGS:-} "$segment"
"$BIN/parse" ${PARSE_FLAGS:-} "$segment"
"$BIN/updatedb" ${UPDATEDB_FLAGS:-} "$segment"
"$BIN/linkdb" ${LINKDB_FLAGS:-} "$segment"
"$BIN/pagerank" ${PAGERANK_FLAGS:-}
"$BIN/sitemap" ${SITEMAP_FLAGS:-}
