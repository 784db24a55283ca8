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


class Partitions(unittest.TestCase):
    def test_from_the_crawldb_then_the_config_then_the_default(self):
        with tempfile.TemporaryDirectory() as d:
            crawl = os.path.join(d, "crawl")
            config = os.path.join(d, "t.toml")
            with open(config, "w") as f:
                f.write("[crawl]\npartitions = 5\n")
            self.assertEqual(ts.read_partitions(crawl, None, None), 8)
            self.assertEqual(ts.read_partitions(crawl, config, None), 5)
            meta = os.path.join(crawl, "crawldb", "current")
            os.makedirs(meta)
            with open(os.path.join(meta, "_meta.json"), "w") as f:
                json.dump({"partitions": 12}, f)
            self.assertEqual(ts.read_partitions(crawl, config, None), 12)
            self.assertEqual(ts.read_partitions(crawl, config, 3), 3)

    def test_object_store_count_needs_the_binaries(self):
        # On an object store the count comes from `readdb --partitions`; without the
        # binaries the error says what to give.
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(ts.StepFailed) as e:
                ts.read_partitions("s3://bucket/crawl", None, None, bin_dir=empty)
        self.assertIn("--bin-dir", str(e.exception))
        self.assertIn("--partitions", str(e.exception))
        self.assertEqual(ts.read_partitions("s3://bucket/crawl", None, 16), 16)


class CommandLines(unittest.TestCase):
    def test_round_sitemaps_and_warc(self):
        args = ts.parse_args(
            ["round", "--crawl-dir", "/c", "--sitemaps", "--warc", "--fetch-time-limit", "60",
             "--warc-flags", "--prefix cc", "--top-n", "5"]
        )
        self.assertTrue(args.sitemaps and args.warc)
        flags = ts.round_flags(args)
        # The sitemap tasks hold the fetch leases: they get the fetch tasks' limit.
        self.assertEqual(flags["sitemap"], ["--time-limit", "60"])
        self.assertEqual(flags["fetch"], ["--time-limit", "60"])
        self.assertEqual(flags["warc"], ["--prefix", "cc"])
        self.assertEqual(flags["generate"], ["--top-n", "5"])
        plain = ts.round_flags(ts.parse_args(["round", "--crawl-dir", "/c"]))
        self.assertFalse(ts.parse_args(["round", "--crawl-dir", "/c"]).sitemaps)
        self.assertEqual(plain["sitemap"], ["--time-limit", f"{ts.DEFAULT_FETCH_TIME_LIMIT:g}"])

    def test_warc_subcommand(self):
        args = ts.parse_args(["warc", "20260101000000", "/x/segments/2", "--crawl-dir", "/c"])
        self.assertEqual(args.command, "warc")
        self.assertEqual(args.segments, ["20260101000000", "/x/segments/2"])
        self.assertEqual(args.warc_flags, "")


if __name__ == "__main__":
    unittest.main()
