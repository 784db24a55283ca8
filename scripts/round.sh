#!/usr/bin/env bash
# One crawl round, each step one process: the round `crawl` runs and the Spark driver
# schedules. Which step runs now is decided in the library (driver::next, the decision
# `crawl` follows) and printed by `trawl plan next --tsv`; this script asks it before
# every step, so it spells no stage order of its own and, like `crawl`, first finishes
# a segment an earlier round left pending (fetched but not parsed, not applied, ...).
# Each step runs as `$BIN/STAGE`, with its segment when the step takes one, plus the
# flags of its variable (GENERATE_FLAGS, FETCH_FLAGS, PARSE_FLAGS, UPDATEDB_FLAGS,
# LINKDB_FLAGS, DEDUP_FLAGS, PAGERANK_FLAGS, SITEMAP_FLAGS, HOSTDB_FLAGS, INDEX_FLAGS,
# WARC_FLAGS). NO_DEDUP=1 leaves dedup out, NO_INDEX=1 the search index; WARC=1 ends
# the round with the segment's WARC export. Uses TRAWL_CRAWL_DIR and TRAWL_CONFIG (set
# by the Makefile).
#
# Exit codes (docs/exit-codes.md), as the plan gives them: 0 = a round was crawled;
# 3 = nothing was due (no round; a crawl loop stops here); 5 = fetch reached no server
# (the steps that record the failures still ran: parse, updatedb, linkdb, hostdb);
# 4 = fetch was interrupted (the round stops there; `crawl` finishes it); anything
# else = the first step that failed stopped the round, and its code is the round's.
set -euo pipefail
BIN=${BIN:-target/release}

plan=()
if [ -n "${NO_DEDUP:-}" ]; then plan+=(--no-dedup); fi
if [ -n "${NO_INDEX:-}" ]; then plan+=(--no-index); fi
if [ -n "${WARC:-}" ]; then plan+=(--warc); fi

# The round's progress, handed to `plan next`: its segments, the stages it ran,
# whether fetch reached no server.
progress=()
segment=
unreachable=
last=
while :; do
  line=$("$BIN/trawl" plan next --tsv "${plan[@]}" "${progress[@]}")
  if [ -z "$line" ]; then
    break
  fi
  IFS=$'\t' read -r stage uses _after nothing_due no_server interrupted on <<< "$line"
  if [ "$stage $on" = "$last" ]; then
    echo "round: $stage${segment:+ on $segment} succeeded but is the next step again (its output is missing); stopping the round" >&2
    exit 1
  fi
  var="$(printf '%s' "$stage" | tr '[:lower:]' '[:upper:]')_FLAGS"
  # shellcheck disable=SC2206 # the flags are words, as on a command line
  args=(${!var:-})
  if [ "$uses" = takes ]; then
    segment=$on
    args+=("$segment")
  fi
  set +e
  if [ "$uses" = makes ]; then
    out=$("$BIN/$stage" "${args[@]}")
    rc=$?
    if [ "$rc" -eq 0 ]; then
      segment=$(printf '%s\n' "$out" | tail -n 1)
    fi
  else
    "$BIN/$stage" "${args[@]}"
    rc=$?
  fi
  set -e
  if [ "$rc" -eq 0 ]; then
    :
  elif [ "$rc" = "$nothing_due" ]; then
    echo "round: no URLs are due; no round was crawled" >&2
    exit "$rc"
  elif [ "$rc" = "$no_server" ]; then
    # The segment is still applied by the steps that record the failures (retries,
    # next fetch time, the hosts' back-off), so it does not hold its URLs back.
    unreachable=$rc
    progress+=(--unreachable)
  elif [ "$rc" = "$interrupted" ]; then
    echo "round: $stage was interrupted; segment $segment holds what was fetched (the rest is fetch_retry/interrupted)." >&2
    echo "round: finish the round before the next one: $BIN/crawl --rounds 1 (it applies pending segments first)" >&2
    exit "$rc"
  else
    exit "$rc"
  fi
  last="$stage $on"
  progress+=(--done "$stage")
  if [ -n "$segment" ]; then
    case " ${progress[*]} " in
      *" --segment $segment "*) ;;
      *) progress+=(--segment "$segment") ;;
    esac
  fi
done

if [ -n "$unreachable" ]; then
  echo "round: WARNING: fetch reached no server (exit code $unreachable): every URL of $segment failed to connect; the failures are recorded in the crawldb and the hostdb. The round's other steps were skipped. Check the network, fetch.resolve, or whether the servers are up." >&2
  exit "$unreachable"
fi
