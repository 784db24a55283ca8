#!/usr/bin/env bash
# One crawl round: generate -> fetch -> parse -> updatedb -> linkdb -> pagerank -> sitemap.
# Uses TRAWL_CRAWL_DIR and TRAWL_CONFIG (set by the Makefile); extra stage flags via
# GENERATE_FLAGS, FETCH_FLAGS, SITEMAP_FLAGS. When generate finds nothing due, only the
# sitemap step runs (new or due sitemaps may bring new URLs for the next round).
#
# Exit codes (docs/exit-codes.md): 0 = a round was crawled; 3 = nothing was due (the
# sitemap step ran; a crawl loop stops here); anything else = the first stage that
# failed stopped the round, and its code is the round's (1 error, 2 usage, 4
# interrupted, 5 no server reachable, 6 locked, 7 corrupt).
set -euo pipefail
BIN=${BIN:-target/release}

set +e
segment=$("$BIN/generate" ${GENERATE_FLAGS:-})
rc=$?
set -e
if [ "$rc" -eq 3 ]; then  # exit code 3: nothing due (docs/exit-codes.md)
  echo "round: no URLs are due; checking sitemaps only" >&2
  "$BIN/sitemap" ${SITEMAP_FLAGS:-}
  exit 3
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
"$BIN/fetch" ${FETCH_FLAGS:-} "$segment"
"$BIN/parse" "$segment"
"$BIN/updatedb" "$segment"
"$BIN/linkdb" "$segment"
"$BIN/pagerank"
"$BIN/sitemap" ${SITEMAP_FLAGS:-}
