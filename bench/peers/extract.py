"""The peers of `articlebench`: the main text that trafilatura and readability-lxml
extract from the same pages trawl's parse reads, written as one JSON object
{extractor: {page key: text}} for articlebench to score with the same metric.

Page keys are those articlebench prints and reads: `zyte/<id>` (the vendored article
extraction benchmark), `wcxb/<id>` (WCXB, when its directory is given) and
`readability/<name>` (the shared Readability pages, when the corpora are there).

    python bench/peers/extract.py --out peers.json [--zyte DIR] [--wcxb DIR] [--corpora DIR]
        [--processes N]

Each extractor runs with its defaults, as a user would call it; a page it fails on
gets an empty text (and is counted in the summary line on stderr).
"""

import argparse
import gzip
import json
import multiprocessing
import sys
import time
from pathlib import Path

import lxml.html
import trafilatura
from readability import Document

# The URL the shared Readability pages are parsed at (bench/src/corpus.rs PAGE_URL).
READABILITY_PAGE_URL = "http://fakehost/test/page.html"


def pages(zyte, wcxb, corpora):
    """(key, url, html bytes) of every page of the sets that are there."""
    truth = json.loads((zyte / "ground-truth.json").read_text())
    for pid, v in sorted(truth.items()):
        yield f"zyte/{pid}", v.get("url"), gzip.decompress((zyte / "html" / f"{pid}.html.gz").read_bytes())
    if wcxb is not None:
        for split in ("dev", "test"):
            for gt_path in sorted((wcxb / split / "ground-truth").glob("*.json")):
                fid = gt_path.stem
                gt = json.loads(gt_path.read_text())
                html = gzip.decompress((wcxb / split / "html" / f"{fid}.html.gz").read_bytes())
                yield f"wcxb/{fid}", gt.get("url"), html
    if corpora is not None and (corpora / "pages").is_dir():
        for d in sorted((corpora / "pages").iterdir()):
            src = d / "source.html"
            if src.is_file():
                yield f"readability/{d.name}", READABILITY_PAGE_URL, src.read_bytes()


def with_trafilatura(html, url):
    return trafilatura.extract(html, url=url) or ""


def with_readability(html, url):
    summary = Document(html, url=url).summary(html_partial=True)
    root = lxml.html.fromstring(summary)
    # A line per block, as trawl writes main text (the metric reads words only).
    for el in root.iter("p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "pre", "br"):
        el.tail = ("\n" + el.tail) if el.tail else "\n"
    return "\n".join(line.strip() for line in root.text_content().splitlines() if line.strip())


EXTRACTORS = {
    "trafilatura": with_trafilatura,
    "readability-lxml": with_readability,
}


def run_one(page):
    """Every extractor on one page: (key, {name: (text, seconds, failed)})."""
    key, url, html = page
    out = {}
    for name, fn in EXTRACTORS.items():
        started = time.perf_counter()
        try:
            text, failed = fn(html, url), False
        except Exception:  # a peer's failure on one page is that page's empty text
            text, failed = "", True
        out[name] = (text, time.perf_counter() - started, failed)
    return key, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--zyte", type=Path, default=Path("bench/data/article-extraction-benchmark"))
    ap.add_argument("--wcxb", type=Path)
    ap.add_argument("--corpora", type=Path, default=Path("../shared/corpora"))
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    out = {name: {} for name in EXTRACTORS}
    failed = {name: 0 for name in EXTRACTORS}
    spent = {name: 0.0 for name in EXTRACTORS}
    corpora = args.corpora if args.corpora.is_dir() else None
    with multiprocessing.Pool(args.processes) as pool:
        for key, res in pool.imap_unordered(run_one, pages(args.zyte, args.wcxb, corpora), chunksize=8):
            for name, (text, secs, bad) in res.items():
                out[name][key] = text
                spent[name] += secs
                failed[name] += bad
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(args.out)
    for name in EXTRACTORS:
        print(
            f"{name}: {len(out[name])} pages, {spent[name]:.1f} CPU-seconds, {failed[name]} failed",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
