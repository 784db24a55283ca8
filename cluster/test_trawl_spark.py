"""Unit tests of the Spark driver's pure parts (no Spark): partition sets, attempt ids,
summary lines, locations and the partition count. `make test` runs them
(`.venv/bin/python -m unittest discover -s cluster`)."""

import json
import os
import tempfile
import unittest

import trawl_spark as ts


class PartitionSets(unittest.TestCase):
    def test_one_partition_a_task(self):
        self.assertEqual(ts.partition_sets(4, 4), ["0", "1", "2", "3"])

    def test_more_tasks_than_partitions(self):
        self.assertEqual(ts.partition_sets(3, 10), ["0", "1", "2"])

    def test_contiguous_near_equal_sets_cover_every_partition_once(self):
        for partitions in range(1, 40):
            for tasks in range(1, 12):
                specs = ts.partition_sets(partitions, tasks)
                covered = []
                for spec in specs:
                    a, _, b = spec.partition("-")
                    covered.extend(range(int(a), int(b or a) + 1))
                self.assertEqual(covered, list(range(partitions)), (partitions, tasks))
                sizes = [len(range(int(s.split("-")[0]), int(s.split("-")[-1]) + 1)) for s in specs]
                self.assertLessEqual(max(sizes) - min(sizes), 1)
        self.assertEqual(ts.partition_sets(8, 3), ["0-2", "3-5", "6-7"])

    def test_refuses_nonsense(self):
        with self.assertRaises(ValueError):
            ts.partition_sets(0, 1)
        with self.assertRaises(ValueError):
            ts.partition_sets(4, 0)


class Names(unittest.TestCase):
    def test_attempt_and_job_ids_fit_the_contract(self):
        self.assertEqual(ts.attempt_id(3, 1, 0), "3-1-0")
        job = ts.new_job_id("r2-updatedb")
        self.assertRegex(job, r"^r2-updatedb-[0-9a-f]{6}$")
        self.assertNotEqual(job, ts.new_job_id("r2-updatedb"))
        self.assertEqual(
            ts.task_flags("j", "0-3", "1-2-0"),
            ["--job", "j", "--partitions", "0-3", "--attempt", "1-2-0"],
        )

    def test_summary_line_is_the_last_line_of_the_stage(self):
        stderr = "fetch: warming up\nINFO something\nfetch: 10 pages in 1.00s\nWARN late\n"
        self.assertEqual(ts.summary_line("fetch", stderr), "fetch: 10 pages in 1.00s")
        self.assertEqual(ts.summary_line("parse", stderr), "")

    def test_locations(self):
        self.assertEqual(ts.resolve_location("s3://b/p"), "s3://b/p")
        self.assertEqual(ts.resolve_location("file:///x/y"), "/x/y")
        self.assertEqual(ts.resolve_location("rel"), os.path.join(os.getcwd(), "rel"))


# The shape of `trawl plan round` (docs/cluster.md, "The plan"), for the pure helpers;
# tests/it/cluster.rs runs the real plan on a real cluster.
FETCH = {
    "stage": "fetch", "segment": "takes",
    "units": [{"run": "tasks", "flags": [], "all": False}, {"run": "commit"}],
    "ok": [0, 5], "outcomes": [[5, "unreachable"]], "leases": True,
    "after_unreachable": False, "optional": None,
}
PAGERANK = {
    "stage": "pagerank", "segment": "none",
    "units": [
        {"run": "tasks", "flags": ["--pass", "links"], "all": False},
        {"run": "tasks", "flags": ["--pass", "graph"], "all": False},
        {"run": "iterate", "flags": ["--pass", "iterate"], "check": ["--check"],
         "then": ["--pass", "rewrite"]},
        {"run": "commit"},
    ],
    "ok": [0], "outcomes": [], "leases": False, "after_unreachable": False, "optional": None,
}
PAGERANK_WHOLE_GRAPH = {
    "stage": "pagerank", "segment": "none",
    "units": [
        {"run": "tasks", "flags": ["--pass", "scores"], "all": True,
         "why": "the whole link graph: HITS and HostRank are not partitioned"},
        {"run": "tasks", "flags": ["--pass", "rewrite"], "all": False},
        {"run": "commit"},
    ],
    "ok": [0], "outcomes": [], "leases": False, "after_unreachable": False, "optional": None,
}
DEDUP = {
    "stage": "dedup", "segment": "none",
    "units": [
        {"run": "tasks", "flags": ["--pass", "keys"], "all": False},
        {"run": "tasks", "flags": ["--pass", "resolve"], "all": True},
        {"run": "commit"},
    ],
    "ok": [0], "outcomes": [], "leases": False, "after_unreachable": False, "optional": "dedup",
}
INDEX = {
    "stage": "index", "segment": "none", "units": [{"run": "whole"}], "ok": [0],
    "outcomes": [], "leases": False, "after_unreachable": False, "optional": "index",
}


class Plan(unittest.TestCase):
    def test_the_progress_file_is_the_drivers_own_and_named_after_the_crawl(self):
        with tempfile.TemporaryDirectory() as state:
            old = os.environ.get("XDG_STATE_HOME")
            os.environ["XDG_STATE_HOME"] = state
            try:
                a = ts.default_progress_file("s3://bucket/crawl")
                self.assertEqual(a, ts.default_progress_file("s3://bucket/crawl"))
                self.assertNotEqual(a, ts.default_progress_file("/data/crawl"))
                self.assertTrue(a.startswith(os.path.join(state, "trawl") + os.sep))
                self.assertTrue(os.path.isdir(os.path.dirname(a)))
            finally:
                if old is None:
                    del os.environ["XDG_STATE_HOME"]
                else:
                    os.environ["XDG_STATE_HOME"] = old

    def test_units_are_announced_with_their_task_counts(self):
        specs = ts.partition_sets(4, 2)
        self.assertEqual(ts.describe_units(FETCH, specs, 4), "2 tasks over 4 partitions, commit")
        self.assertEqual(
            ts.describe_units(PAGERANK, specs, 4),
            "pass links: 2 tasks over 4 partitions, pass graph: 2 tasks over 4 partitions, "
            "pass iterate: 2 tasks over 4 partitions per iteration until the check in the "
            "driver stops it, then pass rewrite: 2 tasks, commit",
        )
        self.assertEqual(
            ts.describe_units(PAGERANK_WHOLE_GRAPH, specs, 4),
            "pass scores: 1 task over every partition (the whole link graph: HITS and HostRank "
            "are not partitioned), pass rewrite: 2 tasks over 4 partitions, commit",
        )
        # A one-task unit without a reason of its own.
        self.assertEqual(
            ts.describe_units(DEDUP, specs, 4),
            "pass keys: 2 tasks over 4 partitions, "
            "pass resolve: 1 task over every partition (not partitioned yet), commit",
        )
        self.assertIn("not partitioned yet", ts.describe_units(INDEX, specs, 4))

    def test_commands_run_the_one_binary(self):
        self.assertEqual(
            ts.trawl_command("/b", "fetch", "/c", "/t.toml", ["seg"]),
            ["/b/trawl", "fetch", "--crawl-dir", "/c", "--config", "/t.toml", "seg"],
        )
        self.assertEqual(ts.trawl_command("/b", "plan", "/c", None), ["/b/trawl", "plan", "--crawl-dir", "/c"])

    def test_the_plan_needs_the_binary(self):
        # Without trawl's binary the error says what to give.
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(ts.StepFailed) as e:
                ts.read_plan(empty, "/nonexistent/crawl", None)
        self.assertIn("--bin-dir", str(e.exception))

    def test_plan_options(self):
        args = ts.parse_args(["round", "--crawl-dir", "/c", "--warc", "--no-dedup"])
        self.assertEqual(ts.plan_args(args), ["--warc", "--no-dedup"])
        self.assertEqual(ts.plan_args(ts.parse_args(["inject", "s.txt", "--crawl-dir", "/c"])), [])


class Iteration(unittest.TestCase):
    """The `iterate` unit's protocol: tasks with `--iteration K`, the check after each
    (its JSON line decides), then the `then` tasks with the last K. The binaries run
    for real in tests/it/cluster.rs; here only the order of what the driver asks."""

    class Recorder(ts.Driver):
        def __init__(self, verdicts):
            self.calls = []
            self.verdicts = list(verdicts)
            self.verbose = False

        def say(self, text):
            pass

        def spark_tasks(self, stage, what, stage_args, job, specs, ok_codes=(0,), extra=(), whole=False):
            self.calls.append(("tasks", list(extra)))
            return []

        def driver_step(self, stage, stage_args, flags, ok_codes=(0,)):
            self.calls.append(("driver", list(flags)))
            return 0, self.verdicts.pop(0)

    UNIT = PAGERANK["units"][2]

    def test_iterates_until_the_check_stops(self):
        d = self.Recorder(['{"iteration": 0, "delta": 0.0, "again": true}\n',
                           '{"iteration": 1, "delta": 0.5, "again": true}\n',
                           'log line\n{"iteration": 2, "delta": 1e-7, "again": false}\n'])
        d.iterate("pagerank", [], "j", ["0-1", "2-3"], (0,), self.UNIT)
        self.assertEqual(d.calls, [
            ("tasks", ["--pass", "iterate", "--iteration", "0"]),
            ("driver", ["--job", "j", "--check", "--iteration", "0"]),
            ("tasks", ["--pass", "iterate", "--iteration", "1"]),
            ("driver", ["--job", "j", "--check", "--iteration", "1"]),
            ("tasks", ["--pass", "iterate", "--iteration", "2"]),
            ("driver", ["--job", "j", "--check", "--iteration", "2"]),
            ("tasks", ["--pass", "rewrite", "--iteration", "2"]),
        ])

    def test_a_check_without_a_verdict_fails_the_step(self):
        d = self.Recorder(["no json\n"])
        with self.assertRaises(ts.StepFailed) as e:
            d.iterate("pagerank", [], "j", ["0"], (0,), self.UNIT)
        self.assertIn("printed no verdict", str(e.exception))


class CommandLines(unittest.TestCase):
    def test_round_sitemaps_and_warc(self):
        args = ts.parse_args(
            ["round", "--crawl-dir", "/c", "--sitemaps", "--warc", "--fetch-time-limit", "60",
             "--warc-flags", "--prefix cc", "--top-n", "5"]
        )
        self.assertTrue(args.sitemaps and args.warc)
        flags = ts.round_flags(args)
        # The steps that hold fetch leases (the plan's `leases`: fetch, sitemap) get
        # this time limit.
        self.assertEqual(flags["time_limit"], 60)
        self.assertEqual(flags["fetch"], [])
        self.assertEqual(flags["warc"], ["--prefix", "cc"])
        self.assertEqual(flags["generate"], ["--top-n", "5"])
        plain = ts.round_flags(ts.parse_args(["round", "--crawl-dir", "/c"]))
        self.assertFalse(ts.parse_args(["round", "--crawl-dir", "/c"]).sitemaps)
        self.assertEqual(plain["time_limit"], ts.DEFAULT_FETCH_TIME_LIMIT)

    def test_warc_subcommand(self):
        args = ts.parse_args(["warc", "20260101000000", "/x/segments/2", "--crawl-dir", "/c"])
        self.assertEqual(args.command, "warc")
        self.assertEqual(args.segments, ["20260101000000", "/x/segments/2"])
        self.assertEqual(args.warc_flags, "")


if __name__ == "__main__":
    unittest.main()
