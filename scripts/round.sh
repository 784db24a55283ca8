#!/usr/bin/env bash
# One crawl round: generate -> fetch -> parse -> updatedb -> linkdb -> pagerank -> index -> sitemap.
# Uses TRAWL_CRAWL_DIR and TRAWL_CONFIG (set by the Makefile); extra stage flags via
# GENERATE_FLAGS, FETCH_FLAGS, PARSE_FLAGS, UPDATEDB_FLAGS, LINKDB_FLAGS, PAGERANK_FLAGS,
# INDEX_FLAGS, SITEMAP_FLAGS (NO_INDEX=1 skips the search index). When generate (exit 3) finds nothing due, only the
# sitemap step runs (new or due sitemaps may bring new URLs for the next round).
# fetch interrupted (exit 4): the round stops there, saying how to apply the segment.
# fetch reached no server (exit 5): the segment is still applied (parse, updatedb,
# linkdb record the failures), then the round stops with exit code 5 and a warning.
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
set +e
"$BIN/fetch" ${FETCH_FLAGS:-} "$segment"
rc=$?
set -e
if [ "$rc" -eq 4 ]; then  # exit code 4: interrupted (SIGINT/SIGTERM), what was fetched is written
  echo "round: fetch was interrupted; segment $segment holds what was fetched (the rest is fetch_retry/interrupted)." >&2
  echo "round: apply it before the next round: $BIN/parse $segment && $BIN/updatedb $segment && $BIN/linkdb $segment" >&2
  exit 4
elif [ "$rc" -eq 5 ]; then  # exit code 5: no server reached; crawl_fetch is written
  # Apply the segment anyway: updatedb records the failed attempts (retries, next
  # fetch time) and the segment does not hold its URLs back until generate.gen_delay.
  # pagerank and sitemap are skipped: nothing new was fetched, and sitemap would only
  # meet the same dead network.
  "$BIN/parse" ${PARSE_FLAGS:-} "$segment"
  "$BIN/updatedb" ${UPDATEDB_FLAGS:-} "$segment"
  "$BIN/linkdb" ${LINKDB_FLAGS:-} "$segment"
  echo "round: WARNING: fetch reached no server (exit code 5): every URL of $segment failed to connect; the failures are recorded in the crawldb. pagerank and sitemap skipped. Check the network, fetch.resolve, or whether the servers are up." >&2
  exit 5
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
"$BIN/parse" ${PARSE_FLAGS:-} "$segment"
"$BIN/updatedb" ${UPDATEDB_FLAGS:-} "$segment"
"$BIN/linkdb" ${LINKDB_FLAGS:-} "$segment"
"$BIN/pagerank" ${PAGERANK_FLAGS:-}
if [ -z "${NO_INDEX:-}" ]; then
  "$BIN/index" ${INDEX_FLAGS:-}
fi
"$BIN/sitemap" ${SITEMAP_FLAGS:-}
