#!/usr/bin/env python3
"""The Spark side of make cluster-bench (scripts/cluster-bench.sh runs it with
spark-submit on a local cluster of --workers one-core workers).

    bench_cluster.py --workers W --bin-dir DIR --config FILE --results FILE --copies DIR
                     [--tasks K] [--noop-runs N] [--repeat N] STAGE=CRAWL:SEGMENT...

First Spark's own cost: --noop-runs jobs of K tasks that each run `true` instead of a
stage binary (the job's wall time over the tasks it ran one after another on each
worker is the per-task overhead). Then, per STAGE=CRAWL:SEGMENT, the stage through
trawl_spark's driver (K tasks + the commit in the driver) on a fresh hard-linked copy of
CRAWL (under --copies, removed after), timed from the first task to the commit's end,
the best of --repeat runs. Each figure is appended to --results as a JSON line
(mode `spark-<W>w`).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trawl_spark  # noqa: E402  (beside this file; shipped to the executors below)


def fresh_copy(src, copies, name):
    """A hard-linked copy of the crawl `src` (datasets are immutable files: stages write
    new files and rename, so the copy's stages never change the original's)."""
    dst = os.path.join(copies, name)
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-al", src, dst], check=True)
    return dst


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--master")
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--bin-dir", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--copies", required=True)
    p.add_argument("--tasks", type=int)
    p.add_argument("--noop-runs", type=int, default=5)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("runs", nargs="*", metavar="STAGE=CRAWL:SEGMENT")
    args = p.parse_args(argv)
    mode = f"spark-{args.workers}w"

    started = time.monotonic()
    sc = trawl_spark.spark_context(types.SimpleNamespace(command="bench", master=args.master))
    sc.addPyFile(trawl_spark.__file__)
    app_start = time.monotonic() - started
    results = open(args.results, "a", encoding="utf-8")

    def record(**row):
        row["mode"] = mode
        results.write(json.dumps(row) + "\n")
        results.flush()

    record(stage="(app start)", seconds=app_start, tasks=0)
    try:
        first = args.runs[0].split("=", 1)[1].split(":", 1)[0] if args.runs else "-"
        plan = trawl_spark.read_plan(
            os.path.abspath(args.bin_dir), os.path.abspath(first), args.config
        )
        partitions = plan["partitions"]
        tasks = args.tasks or partitions
        driver = trawl_spark.Driver(
            sc,
            types.SimpleNamespace(
                bin_dir=args.bin_dir,
                crawl_dir=first,
                config=args.config,
                tasks=tasks,
                partitions=None,
                verbose=False,
            ),
        )
        specs = trawl_spark.partition_sets(partitions, tasks)

        # Spark's cost per task: jobs of no-op tasks (the first one also warms the
        # executors' Python workers up, so it is not counted).
        times = []
        for i in range(args.noop_runs + 1):
            t = time.monotonic()
            driver.spark_tasks_quiet("true", specs, f"noop-{i}")
            if i > 0:
                times.append(time.monotonic() - t)
        times.sort()
        median = times[len(times) // 2]
        waves = -(-len(specs) // args.workers)  # tasks run one after another per worker
        record(stage="(no-op job)", seconds=median, tasks=len(specs))
        record(stage="(per task)", seconds=median / waves, tasks=1)
        print(
            f"bench_cluster: {mode}: a job of {len(specs)} no-op tasks takes {median:.3f}s "
            f"(median of {len(times)}), {1000 * median / waves:.0f} ms a task",
            flush=True,
        )

        os.makedirs(args.copies, exist_ok=True)
        for run in args.runs:
            stage, rest = run.split("=", 1)
            crawl, segment = rest.split(":", 1)
            best = None
            for _ in range(args.repeat):
                copy = fresh_copy(os.path.abspath(crawl), args.copies, f"{mode}-{stage}")
                driver.crawl_dir = copy
                t = time.monotonic()
                step = next(s for s in plan["round"] if s["stage"] == stage)
                driver.step(step, [os.path.join(copy, "segments", segment)], "bench", partitions)
                seconds = time.monotonic() - t
                best = seconds if best is None else min(best, seconds)
                shutil.rmtree(copy, ignore_errors=True)
            record(stage=stage, seconds=best, tasks=len(specs))
            print(f"bench_cluster: {mode}: {stage} {best:.2f}s ({len(specs)} tasks + commit)", flush=True)
    finally:
        results.close()
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
