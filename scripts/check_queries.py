#!/usr/bin/env python3
"""Runs the README's DuckDB queries, as written, against a crawl made by `make demo`.

Usage: check_queries.py README.md CRAWL_DIR

Every ```sql block of the README is executed with DuckDB from the repository root
(the queries name `crawl/...`; when CRAWL_DIR is another directory, that prefix is
rewritten). Each query must return rows, and the results are cross-checked against
the Parquet files read independently, so the README's queries and trawl's schemas
cannot drift apart unnoticed.
"""
import pathlib
import re
import sys

import duckdb

KNOWN_STATUSES = {
    "db_unfetched", "db_fetched", "db_gone", "db_redir_temp",
    "db_redir_perm", "db_notmodified", "db_duplicate",
}


def main() -> int:
    readme, crawl_dir = pathlib.Path(sys.argv[1]), sys.argv[2].rstrip("/")
    blocks = re.findall(r"```sql\n(.*?)```", readme.read_text(), re.S)
    if len(blocks) < 3:
        print(f"FAIL: {readme} has {len(blocks)} sql blocks, expected at least 3")
        return 1
    con = duckdb.connect()
    failed = 0
    results = []
    for i, sql in enumerate(blocks, 1):
        if crawl_dir != "crawl":
            sql = sql.replace("'crawl/", f"'{crawl_dir}/")
        try:
            rel = con.sql(sql)
            cols, rows = rel.columns, rel.fetchall()
        except Exception as e:  # noqa: BLE001 - report any DuckDB failure
            print(f"FAIL query {i}: {e}\n{sql}")
            failed += 1
            continue
        print(f"query {i}: {len(rows)} rows, columns {cols}")
        for r in rows[:5]:
            print("   ", r)
        if not rows:
            print(f"FAIL query {i} returned no rows:\n{sql}")
            failed += 1
        results.append((cols, rows))

    # Cross-checks against the data read independently of the README.
    db = f"'{crawl_dir}/crawldb/current/*.parquet'"
    (total,), = con.sql(f"SELECT count(*) FROM {db}").fetchall()
    (distinct,), = con.sql(f"SELECT count(DISTINCT url) FROM {db}").fetchall()
    statuses = {s for (s,) in con.sql(f"SELECT DISTINCT status FROM {db}").fetchall()}
    types = {r[0]: r[1] for r in con.sql(f"DESCRIBE SELECT * FROM {db}").fetchall()}
    checks = [
        (total == distinct, f"crawldb has one row per URL ({total} rows, {distinct} URLs)"),
        (statuses <= KNOWN_STATUSES, f"statuses are Nutch's names ({sorted(statuses)})"),
        ("db_fetched" in statuses, "the demo fetched pages"),
        (types.get("fetch_time", "").startswith("TIMESTAMP WITH TIME ZONE"),
         f"fetch_time is a UTC timestamp ({types.get('fetch_time')})"),
    ]
    if results:
        cols, rows = results[0]
        by_status = sum(r[-1] for r in rows if isinstance(r[-1], int))
        checks.append((by_status == total,
                       f"query 1 (URLs by status) adds up to the crawldb's {total} rows ({by_status})"))
    for ok, what in checks:
        print(("ok   " if ok else "FAIL ") + what)
        failed += 0 if ok else 1
    passed = len(blocks) + len(checks) - failed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
