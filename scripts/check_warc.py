#!/usr/bin/env python3
"""Checks trawl's WARC export with an independent reader (warcio).

Usage: check_warc.py WARC_DIR SEGMENT_JSONL

SEGMENT_JSONL has one JSON object per content row of the exported segment:
{"url": ..., "http_status": ..., "ip_address": ..., "content_hex": ...}.

Every .warc.gz file in WARC_DIR is read with warcio with digest checking on.
Checked: each file starts with a warcinfo record whose WARC-Filename is the file's
name and whose id every later record of the file cites in WARC-Warcinfo-ID; records
are warcinfo, request or response only; every block and payload digest verifies;
every request is WARC-Concurrent-To a response of the same target URI and back;
the responses are exactly the segment's content rows (one per URL), with the same
HTTP status, IP address and payload bytes. Exits 1 and lists the problems otherwise.
"""

import json
import os
import sys

from warcio.archiveiterator import ArchiveIterator


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    warc_dir, jsonl = sys.argv[1], sys.argv[2]
    expected = {}
    with open(jsonl, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                expected[row["url"]] = row
    problems = []
    files = sorted(n for n in os.listdir(warc_dir) if n.endswith(".warc.gz"))
    if not files:
        problems.append(f"{warc_dir}: no .warc.gz files")
    requests, responses = {}, {}
    counts = {"warcinfo": 0, "request": 0, "response": 0}
    for name in files:
        path = os.path.join(warc_dir, name)
        warcinfo_id = None
        with open(path, "rb") as stream:
            for i, record in enumerate(ArchiveIterator(stream, check_digests=True)):
                h = record.rec_headers
                rtype = record.rec_type
                rid = h.get_header("WARC-Record-ID")
                where = f"{name} record {i} ({rtype} {rid})"
                if h.protocol != "WARC/1.1":
                    problems.append(f"{where}: version {h.protocol}")
                if rtype not in counts:
                    problems.append(f"{where}: unexpected type")
                    continue
                counts[rtype] += 1
                raw = record.raw_stream.read()
                if record.digest_checker.passed is not True:
                    problems.append(
                        f"{where}: digests not verified: {record.digest_checker.problems}"
                    )
                if i == 0:
                    if rtype != "warcinfo":
                        problems.append(f"{where}: first record is not warcinfo")
                    if h.get_header("WARC-Filename") != name:
                        problems.append(f"{where}: WARC-Filename {h.get_header('WARC-Filename')}")
                    if b"software: trawl/" not in raw:
                        problems.append(f"{where}: warcinfo lacks software")
                    warcinfo_id = rid
                    continue
                if rtype == "warcinfo":
                    problems.append(f"{where}: warcinfo not first")
                    continue
                if h.get_header("WARC-Warcinfo-ID") != warcinfo_id:
                    problems.append(f"{where}: WARC-Warcinfo-ID does not cite the file's warcinfo")
                uri = h.get_header("WARC-Target-URI")
                entry = {
                    "uri": uri,
                    "to": h.get_header("WARC-Concurrent-To"),
                    "ip": h.get_header("WARC-IP-Address"),
                    "where": where,
                }
                if rtype == "request":
                    if record.http_headers is None or record.http_headers.protocol != "GET":
                        problems.append(f"{where}: not a GET request block")
                    requests[rid] = entry
                else:
                    entry["status"] = int(record.http_headers.get_statuscode())
                    entry["payload"] = raw
                    if uri in responses:
                        problems.append(f"{where}: second response for {uri}")
                    responses[uri] = dict(entry, id=rid)
    by_id = {r["id"]: r for r in responses.values()}
    for rid, req in requests.items():
        resp = by_id.get(req["to"])
        if resp is None:
            problems.append(f"{req['where']}: WARC-Concurrent-To {req['to']} is no response")
        elif resp["uri"] != req["uri"] or resp["to"] != rid:
            problems.append(f"{req['where']}: request/response pair does not match")
    if len(requests) != len(responses):
        problems.append(f"{len(requests)} requests for {len(responses)} responses")
    missing = sorted(set(expected) - set(responses))
    extra = sorted(set(responses) - set(expected))
    if missing:
        problems.append(f"content rows without a response record: {missing[:5]} ({len(missing)})")
    if extra:
        problems.append(f"response records not in the segment: {extra[:5]} ({len(extra)})")
    for url in sorted(set(expected) & set(responses)):
        want, got = expected[url], responses[url]
        if got["status"] != want["http_status"]:
            problems.append(f"{url}: status {got['status']} != {want['http_status']}")
        if got["ip"] != want.get("ip_address"):
            problems.append(f"{url}: WARC-IP-Address {got['ip']} != {want.get('ip_address')}")
        if got["payload"] != bytes.fromhex(want["content_hex"]):
            problems.append(f"{url}: payload differs from the segment's content")
    for p in problems:
        print(f"check_warc: {p}", file=sys.stderr)
    print(
        f"check_warc: {len(files)} files, {counts['warcinfo']} warcinfo, {counts['request']} request, "
        f"{counts['response']} response records; {len(expected)} content rows; "
        f"{len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
