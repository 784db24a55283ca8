#!/usr/bin/env bash
# One crawl round: generate -> fetch -> parse -> updatedb -> linkdb -> pagerank.
# Uses TRAWL_CRAWL_DIR and TRAWL_CONFIG (set by the Makefile); extra stage flags via
# GENERATE_FLAGS, FETCH_FLAGS. Exits 0 without a round when generate finds nothing due.
set -euo pipefail
BIN=${BIN:-target/release}

set +e
segment=$("$BIN/generate" ${GENERATE_FLAGS:-})
rc=$?
set -e
if [ "$rc" -eq 2 ]; then
  echo "round: no URLs are due; nothing to do" >&2
  exit 0
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
"$BIN/fetch" ${FETCH_FLAGS:-} "$segment"
"$BIN/parse" "$segment"
"$BIN/updatedb" "$segment"
"$BIN/linkdb" "$segment"
"$BIN/pagerank"
