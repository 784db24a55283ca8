#!/usr/bin/env python3
"""DuckDB doing trawl's bulk jobs, for `scalebench` (make bench) to compare against.

    bench_duckdb.py inject SEEDS OUT.parquet
    bench_duckdb.py generate 'CRAWLDB/current/*.parquet' OUT.parquet TOP_N MAX_PER_HOST

Both run DuckDB with 2 threads (the project's machine) and write zstd Parquet.

inject: read the seed lines, normalize as far as SQL reasonably can (trim, lower-case
scheme and host), keep one row per URL, sort by URL and write the crawldb's columns
(db_unfetched, fetch_time now, score 1.0, 30-day interval, depth 0).

generate: the eligible rows (fetch_time <= now, status not db_duplicate), at most
MAX_PER_HOST per host by score descending then URL, then the TOP_N best by score
descending then URL.

Prints one line: rows written and seconds inside DuckDB (the caller measures the
process's wall time and peak RSS).
"""

import sys
import time

import duckdb

THREADS = 2


def connect():
    con = duckdb.connect()
    con.execute(f"SET threads = {THREADS}")
    con.execute("SET preserve_insertion_order = false")
    return con


def inject(seeds, out):
    con = connect()
    con.execute(
        f"""
        COPY (
          SELECT url,
                 host,
                 'db_unfetched' AS status,
                 now()::TIMESTAMP AS fetch_time,
                 NULL::TIMESTAMP AS modified_time,
                 NULL::TIMESTAMP AS fetched_time,
                 2592000::BIGINT AS fetch_interval,
                 0::INTEGER AS retries,
                 1.0::DOUBLE AS score,
                 NULL::VARCHAR AS signature,
                 0::INTEGER AS depth,
                 NULL::INTEGER AS http_status,
                 NULL::VARCHAR AS content_type,
                 NULL::VARCHAR AS reason,
                 NULL::VARCHAR AS redirect_target,
                 MAP()::MAP(VARCHAR, VARCHAR) AS metadata
          FROM (
            -- scheme://authority/rest: lower-case scheme and authority (string
            -- functions: cheaper than regular expressions), host without the port.
            SELECT DISTINCT
                   lower(split_part(line, '/', 1)) || '//' || lower(split_part(line, '/', 3))
                     || substr(line, length(split_part(line, '/', 1)) + length(split_part(line, '/', 3)) + 3) AS url,
                   lower(split_part(split_part(line, '/', 3), ':', 1)) AS host
            FROM (
              SELECT trim(line) AS line
              FROM read_csv('{seeds}', columns = {{'line': 'VARCHAR'}}, header = false,
                            delim = '\t', quote = '', escape = '', auto_detect = false)
            )
            WHERE line LIKE '%://%' AND NOT starts_with(line, '#')
          )
          ORDER BY url
        ) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
        """
    )
    return con.execute(f"SELECT count(*) FROM '{out}'").fetchone()[0]


def generate(crawldb, out, top_n, max_per_host):
    con = connect()
    con.execute(
        f"""
        COPY (
          SELECT * EXCLUDE (rn)
          FROM (
            SELECT *, row_number() OVER (PARTITION BY host ORDER BY score DESC, url) AS rn
            FROM read_parquet('{crawldb}')
            WHERE fetch_time <= now() AND status <> 'db_duplicate'
          )
          WHERE rn <= {max_per_host}
          ORDER BY score DESC, url
          LIMIT {top_n}
        ) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
        """
    )
    return con.execute(f"SELECT count(*) FROM '{out}'").fetchone()[0]


def main(argv):
    if len(argv) >= 3 and argv[0] == "inject":
        job = lambda: inject(argv[1], argv[2])
    elif len(argv) >= 5 and argv[0] == "generate":
        job = lambda: generate(argv[1], argv[2], int(argv[3]), int(argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    t = time.monotonic()
    rows = job()
    print(f"duckdb {argv[0]}: {rows} rows in {time.monotonic() - t:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
