#!/usr/bin/env python3
"""Reads tables of a crawl on an object store with stock Delta Lake readers only
(no trawl code): the `deltalake` package (delta-rs), polars (`pl.scan_delta`) and
pyarrow (the Parquet files the table's current version lists). Used by
tests/it/object_store.rs; also a worked example for docs/object-store.md.

    read_delta.py [--spark] s3://bucket/crawl/crawldb [s3://bucket/crawl/segments/S/parse_data ...]

The endpoint and credentials come from the standard AWS_* environment variables
(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
AWS_ALLOW_HTTP). Prints one JSON line per table: its version, its row count as each
reader sees it, the rows of each partition (`part`) as polars prunes to it, and the
row count of the version before (time travel), if any. With --spark, also the rows
Spark reads from the files the current version lists (`spark.read.parquet(*files)`,
a local session; for `file://` tables: Spark reads S3 through hadoop-aws, a JAR this
project cannot install offline).
"""
import json
import os
import sys
from urllib.parse import urlparse

import deltalake
import polars as pl
import pyarrow.fs as pafs
import pyarrow.parquet as pq


def storage_options():
    keys = ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP"]
    return {k: os.environ[k] for k in keys if k in os.environ}


def pyarrow_fs():
    endpoint = urlparse(os.environ.get("AWS_ENDPOINT_URL", ""))
    return pafs.S3FileSystem(
        access_key=os.environ.get("AWS_ACCESS_KEY_ID"),
        secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
        region=os.environ.get("AWS_REGION", "us-east-1"),
        endpoint_override=endpoint.netloc or None,
        scheme=endpoint.scheme or "https",
    )


def read(uri):
    opts = storage_options()
    table = deltalake.DeltaTable(uri, storage_options=opts)
    version = table.version()
    rows = table.to_pyarrow_table().num_rows
    frame = pl.scan_delta(uri, storage_options=opts)
    polars_rows = frame.select(pl.len()).collect().item()
    by_part = frame.group_by("part").agg(pl.len()).collect()
    parts = {}
    for part, _ in by_part.iter_rows():
        # Pruned to one partition: polars reads only the files whose part matches.
        parts[str(part)] = frame.filter(pl.col("part") == part).select(pl.len()).collect().item()
    if uri.startswith("s3://"):
        files = [u.split("://", 1)[1] for u in table.file_uris()]
        fs = pyarrow_fs()
    else:
        files = [u.removeprefix("file://") for u in table.file_uris()]
        fs = pafs.LocalFileSystem()
    pyarrow_rows = pq.ParquetDataset(files, filesystem=fs).read().num_rows if files else 0
    before = None
    if version > 0:
        before = deltalake.DeltaTable(uri, version=version - 1, storage_options=opts).to_pyarrow_table().num_rows
    return {
        "table": uri,
        "version": version,
        "files": len(files),
        "deltalake": rows,
        "polars": polars_rows,
        "pyarrow": pyarrow_rows,
        "parts": parts,
        "previous_version_rows": before,
    }


def spark_rows(spark, uri):
    files = deltalake.DeltaTable(uri, storage_options=storage_options()).file_uris()
    return spark.read.parquet(*files).count() if files else 0


def main():
    args = sys.argv[1:]
    with_spark = "--spark" in args
    uris = [a for a in args if a != "--spark"]
    if not uris:
        sys.exit("usage: read_delta.py [--spark] TABLE_URI...")
    spark = None
    if with_spark:
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[1]")
            .appName("read_delta")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
    for uri in uris:
        out = read(uri)
        if spark is not None:
            out["spark"] = spark_rows(spark, uri)
        print(json.dumps(out), flush=True)
    if spark is not None:
        spark.stop()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # Leave without the interpreter's teardown: the readers' native thread pools
    # (pyarrow's, delta-rs's tokio, polars') sometimes abort it ("terminate called
    # without an active exception") after everything was printed.
    os._exit(0)
