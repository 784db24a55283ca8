#!/usr/bin/env python3
"""Compares two crawls' crawldbs by (URL, status, signature), through `readdb --dump`.

    compare_crawldb.py [--bin-dir DIR] [--config FILE] CRAWL_A CRAWL_B

Prints the status counts of both and either `equal: N URLs` (exit code 0) or the first
URLs that differ (missing on one side, another status or signature; exit code 1).
Fetch times, scores and the like are not compared: they depend on when a page was
fetched, not on what was crawled.
"""

import argparse
import collections
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def crawldb(bin_dir, config, crawl):
    """url -> (status, signature) of a crawl's crawldb."""
    argv = [os.path.join(bin_dir, "readdb"), "--crawl-dir", crawl, "--dump"]
    if config:
        argv += ["--config", config]
    out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True).stdout
    rows = {}
    for line in out.splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["url"]] = (row["status"], row.get("signature"))
    return rows


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--bin-dir", default=os.path.join(REPO, "target", "release"))
    p.add_argument("--config")
    p.add_argument("a")
    p.add_argument("b")
    args = p.parse_args(argv)
    a = crawldb(args.bin_dir, args.config, args.a)
    b = crawldb(args.bin_dir, args.config, args.b)
    for name, rows in [(args.a, a), (args.b, b)]:
        counts = collections.Counter(status for status, _ in rows.values())
        signed = sum(1 for _, sig in rows.values() if sig)
        print(
            f"{name}: {len(rows)} URLs ("
            + ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
            + f"; {signed} with a signature)"
        )
    diffs = []
    for url in sorted(a.keys() | b.keys()):
        if a.get(url) != b.get(url):
            diffs.append(f"  {url}: {a.get(url, 'missing')} vs {b.get(url, 'missing')}")
    if diffs:
        print(f"the crawldbs differ in {len(diffs)} URLs (url: (status, signature) A vs B):")
        print("\n".join(diffs[:20]))
        return 1
    print(f"equal: {len(a)} URLs with the same status and signature")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
