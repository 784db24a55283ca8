#!/usr/bin/env python3
"""trawl on Apache Spark: Spark schedules the tasks, trawl's own binaries do the work.

    spark-submit cluster/trawl_spark.py inject SEEDS... --crawl-dir URI --config FILE [options]
    spark-submit cluster/trawl_spark.py round --crawl-dir URI --config FILE [--rounds N] [--top-n N] [--sitemaps] [--warc] [options]
    spark-submit cluster/trawl_spark.py warc SEGMENT... --crawl-dir URI --config FILE [--warc-flags FLAGS]

Every stage is a Spark job of independent partition tasks followed by its commit (the
task contract, docs/cluster.md): the driver picks a job id, splits the crawl's
partitions into --tasks partition sets, and runs one Spark task per set. A task runs
the stage binary on its worker with `--job J --partitions S --attempt A`, where A is
`<stageId>-<partitionId>-<attemptNumber>` from Spark's TaskContext, so a retry (a
failed task run again, up to spark.task.maxFailures times) writes its own attempt
directory; the binary's non-zero exit fails the Spark task. Speculation is off: a
partition is never fetched by two attempts on purpose. The driver-side steps
(generate's `--cutoff`, every stage's `--commit`) run in the driver's process, which
installs the finished attempts. No row of the crawl passes through Spark: the
binaries read and write the crawl directory (a shared filesystem or an object store)
themselves, and the tasks return only their summary lines.

A round is generate (histogram pass, cut-off, select pass, commit) -> fetch -> parse
-> updatedb -> linkdb -> pagerank (one scores task over all partitions, then rewrite
tasks), as scripts/round.sh runs them in one process; with --sitemaps, each round
starts with sitemap tasks (the sitemaps of each partition's hosts, under the
partitions' fetch leases, then the commit merging their URLs into the crawldb), and
with --warc it ends with the round's segment exported as WARC files by warc tasks
(`warc SEGMENT...` exports given segments the same way). Generate finding nothing due
(its commit's exit code 3) ends the rounds early with exit code 3; fetch reaching no
server (5) applies the segment (parse, updatedb, linkdb), skips pagerank and stops with
5; any other failure stops with the failed step's exit code (1 when a Spark job failed
after its retries).

The binaries must exist at the same path on every node (--bin-dir, default: the
checkout's target/release) and --crawl-dir and --config must name the same data on
every node: relative local paths are made absolute against the driver's directory.
"""

import argparse
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import threading
import tomllib

# Exit codes of the stage binaries (docs/exit-codes.md).
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_NOTHING_DUE = 3
EXIT_UNREACHABLE = 5

# The round's stages that take the segment and their extra-flags option.
SEGMENT_STAGES = ["fetch", "parse", "updatedb", "linkdb"]
# Every stage of a round with an extra-flags option.
ROUND_STAGES = ["sitemap", "generate"] + SEGMENT_STAGES + ["pagerank", "warc"]
# A fetch task needs a time limit: its partitions' leases expire after it (seconds).
DEFAULT_FETCH_TIME_LIMIT = 1800.0
# The driver's environment variables passed to the executors when the crawl
# directory is on an object store (endpoint, region, credentials).
OBJECT_STORE_ENV = ("AWS_", "GOOGLE_", "AZURE_")

# How often the driver prints a running Spark job's task counts (when they changed).
PROGRESS_SECONDS = float(os.environ.get("TRAWL_SPARK_PROGRESS_SECONDS", "10"))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StepFailed(Exception):
    """A driver-side step or a Spark job failed; `code` is the driver's exit code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------------------
# Pure helpers (no Spark): partition sets, command lines, summary lines.


def partition_sets(partitions, tasks):
    """Splits partitions 0..partitions-1 into at most `tasks` contiguous sets of
    near-equal size, as `--partitions` specs (`3`, `3-5`)."""
    if partitions < 1:
        raise ValueError(f"a crawl has at least one partition, not {partitions}")
    if tasks < 1:
        raise ValueError(f"--tasks must be at least 1, not {tasks}")
    k = min(tasks, partitions)
    base, extra = divmod(partitions, k)
    specs, start = [], 0
    for i in range(k):
        size = base + (1 if i < extra else 0)
        end = start + size - 1
        specs.append(str(start) if start == end else f"{start}-{end}")
        start = end + 1
    return specs


def new_job_id(prefix):
    """A job id unique per run: `<prefix>-<6 hex digits>` (`r2-updatedb-5f3a0c`)."""
    return f"{prefix}-{secrets.token_hex(3)}"


def attempt_id(stage_id, partition_id, attempt_number):
    """The attempt id of a Spark task run: `<stageId>-<partitionId>-<attemptNumber>`."""
    return f"{stage_id}-{partition_id}-{attempt_number}"


def task_flags(job, spec, attempt):
    """The flags that make a stage binary run as one task of `job`."""
    return ["--job", job, "--partitions", spec, "--attempt", attempt]


def summary_line(stage, stderr):
    """The binary's one-line summary: its last stderr line starting `<stage>: `."""
    prefix = f"{stage}: "
    for line in reversed(stderr.splitlines()):
        if line.startswith(prefix):
            return line
    return ""


def tail(text, lines=15):
    """The last `lines` lines of `text`, for error messages."""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def resolve_location(location):
    """A crawl directory, config or bin dir as every node must see it: URIs as given,
    local paths absolute."""
    if "://" in location:
        if location.startswith("file://"):
            return location[len("file://") :]
        return location
    return os.path.abspath(location)


def is_object_store(crawl_dir):
    """Whether the crawl directory is an object-store URI (s3://, gs://, az://, ...):
    then every task and driver step runs on a scratch mirror of its own."""
    return "://" in crawl_dir


def read_partitions(crawl_dir, config, override, bin_dir=None):
    """The crawl's partition count: --partitions when given, else `partitions` of
    `<crawl>/crawldb/current/_meta.json` (on an object store as `readdb --partitions`
    reads it: no part data is downloaded), else (no crawldb yet: inject) the config's
    `crawl.partitions` (default 8)."""
    if override is not None:
        return override
    if is_object_store(crawl_dir):
        argv = [os.path.join(bin_dir or ".", "readdb"), "--crawl-dir", crawl_dir, "--partitions"]
        if config:
            argv += ["--config", config]
        with tempfile.TemporaryDirectory(prefix="trawl-driver-") as work:
            try:
                proc = subprocess.run(
                    argv + ["--work-dir", work],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            except OSError as e:
                raise StepFailed(
                    EXIT_ERROR,
                    f"cannot run {argv[0]} to read the partition count of {crawl_dir}: {e}; "
                    "give --bin-dir (the directory of trawl's binaries) or --partitions",
                ) from e
        if proc.returncode == 0 and proc.stdout.strip().isdigit():
            return int(proc.stdout.strip())
        if "no crawldb" not in proc.stderr and "no such crawl directory" not in proc.stderr:
            raise StepFailed(
                proc.returncode or EXIT_ERROR,
                f"cannot read the partition count of {crawl_dir}: {shlex.join(argv)}\n"
                f"{tail(proc.stderr)}",
            )
        meta = None
    else:
        meta = os.path.join(crawl_dir, "crawldb", "current", "_meta.json")
    if meta and os.path.exists(meta):
        try:
            with open(meta, encoding="utf-8") as f:
                return int(json.load(f)["partitions"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise StepFailed(
                1, f"cannot read `partitions` from {meta}: {e}; is the crawldb complete?"
            ) from e
    partitions = 8
    if config and "://" not in config:
        try:
            with open(config, "rb") as f:
                partitions = int(tomllib.load(f).get("crawl", {}).get("partitions", 8))
        except (OSError, ValueError, TypeError, tomllib.TOMLDecodeError) as e:
            raise StepFailed(2, f"cannot read crawl.partitions from {config}: {e}") from e
    return partitions


# ---------------------------------------------------------------------------------
# Running binaries: on the executors (tasks) and in the driver (driver-side steps).


def _die_with_parent():
    """In the child before exec: get SIGTERM when the Python worker that started the
    binary dies (Spark killed the task or the executor), so no binary outlives its
    task by more than the binary's own stop at a signal."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except OSError:
        pass  # not Linux: the binary may outlive a killed task (leases still guard)


def make_task(stage, command, job, ok_codes, extra_flags=()):
    """The function a Spark task runs on its executor for one `(index, spec)` element:
    run `command + task flags + extra_flags`, raise on a non-zero exit (Spark retries
    the task), return what the driver prints."""

    def run(element):
        from pyspark import TaskContext

        _index, spec = element
        ctx = TaskContext.get()
        attempt = attempt_id(ctx.stageId(), ctx.partitionId(), ctx.attemptNumber())
        argv = command + task_flags(job, spec, attempt) + list(extra_flags)
        started = time.monotonic()
        # On an object store the task runs on a scratch mirror of its own under the
        # worker's local dir, removed when the task ends.
        work = None
        if is_object_store(command[2]):
            local = (os.environ.get("SPARK_LOCAL_DIRS") or "").split(",")[0] or None
            work = tempfile.mkdtemp(prefix=f"trawl-task-{attempt}-", dir=local)
            argv += ["--work-dir", work]
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                preexec_fn=_die_with_parent,
            )
        finally:
            if work:
                shutil.rmtree(work, ignore_errors=True)
        seconds = time.monotonic() - started
        if proc.returncode not in ok_codes:
            how = (
                f"killed by signal {-proc.returncode}"
                if proc.returncode < 0
                else f"exit code {proc.returncode}"
            )
            raise RuntimeError(
                f"{stage} task --partitions {spec} --attempt {attempt} on "
                f"{socket.gethostname()} failed ({how}) after {seconds:.1f}s: "
                f"{shlex.join(argv)}\n{tail(proc.stderr)}"
            )
        return {
            "spec": spec,
            "attempt": attempt,
            "retry": ctx.attemptNumber(),
            "code": proc.returncode,
            "seconds": seconds,
            "host": socket.gethostname(),
            "summary": summary_line(stage, proc.stderr),
        }

    return run


class Driver:
    """Runs stages as Spark jobs plus driver-side steps, printing progress."""

    def __init__(self, sc, args):
        self.sc = sc
        self.bin_dir = resolve_location(args.bin_dir)
        self.crawl_dir = resolve_location(args.crawl_dir)
        self.config = resolve_location(args.config) if args.config else None
        # Where the tasks find the binaries and the config: as given (a relative path
        # is the executor's working directory's, where --archives and --files unpack).
        self.task_bin_dir = getattr(args, "task_bin_dir", None) or self.bin_dir
        self.task_config = getattr(args, "task_config", None) or self.config
        self.tasks = args.tasks
        self.partitions_override = args.partitions
        self.verbose = args.verbose

    def command(self, stage, stage_args, task=False):
        """A stage's command line without the task flags, for a task or the driver."""
        bin_dir, config = (self.task_bin_dir, self.task_config) if task else (self.bin_dir, self.config)
        argv = [os.path.join(bin_dir, stage), "--crawl-dir", self.crawl_dir]
        if config:
            argv += ["--config", config]
        return argv + list(stage_args)

    def say(self, text):
        print(text, flush=True)

    def partitions(self):
        return read_partitions(
            self.crawl_dir, self.config, self.partitions_override, self.bin_dir
        )

    def run_job(self, stage, what, command, job, specs, ok_codes=(EXIT_OK,), extra=()):
        """One Spark job: a task per partition set running `command` + task flags +
        `extra`. Returns the tasks' results."""
        group = f"{job}-{what.replace(' ', '-')}"
        self.sc.setJobGroup(group, f"trawl {stage} {what} (job {job}, {len(specs)} tasks)")
        rdd = self.sc.parallelize(list(enumerate(specs)), len(specs))
        done = threading.Event()
        progress = threading.Thread(
            target=self.progress, args=(stage, what, group, done), daemon=True
        )
        progress.start()
        try:
            return rdd.map(make_task(stage, command, job, set(ok_codes), extra)).collect()
        except Exception as e:  # py4j's Py4JJavaError: the job failed after its retries
            raise StepFailed(
                EXIT_ERROR,
                f"{stage} {what}: the Spark job of job {job} failed after its retries "
                f"(spark.task.maxFailures): {first_line_of_cause(e)}",
            ) from e
        finally:
            done.set()
            progress.join()

    def progress(self, stage, what, group, done):
        """Every PROGRESS_SECONDS while a job runs: its finished, running and failed
        tasks, when they changed."""
        last = None
        started = time.monotonic()
        while not done.wait(PROGRESS_SECONDS):
            try:
                tracker = self.sc.statusTracker()
                stages = [
                    tracker.getStageInfo(s)
                    for j in tracker.getJobIdsForGroup(group)
                    for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])
                ]
            except Exception:  # the context is stopping: no progress to show
                return
            stages = [s for s in stages if s is not None]
            if not stages:
                continue
            now = (
                sum(s.numCompletedTasks for s in stages),
                sum(s.numTasks for s in stages),
                sum(s.numActiveTasks for s in stages),
                sum(s.numFailedTasks for s in stages),
            )
            if now != last:
                last = now
                self.say(
                    f"  {stage} {what}: {now[0]}/{now[1]} tasks done, {now[2]} running, "
                    f"{now[3]} failed attempts, {time.monotonic() - started:.0f}s"
                )

    def spark_tasks_quiet(self, command, specs, job):
        """A job of tasks running `command` (e.g. `true`: Spark's own cost per task)."""
        return self.run_job("noop", "tasks", [command], job, specs)

    def spark_tasks(self, stage, what, stage_args, job, specs, ok_codes=(EXIT_OK,), extra=()):
        """A stage's Spark job: a task per partition set. Prints each task's summary line."""
        started = time.monotonic()
        results = self.run_job(
            stage, what, self.command(stage, stage_args, task=True), job, specs, ok_codes, extra
        )
        retried = sum(1 for r in results if r["retry"] > 0)
        self.say(
            f"  {stage} {what}: {len(results)} tasks in {time.monotonic() - started:.1f}s"
            + (f" ({retried} after a retry)" if retried else "")
        )
        for r in sorted(results, key=lambda r: r["spec"]):
            retry = f", retry {r['retry']}" if r["retry"] else ""
            self.say(
                f"    [partitions {r['spec']}, attempt {r['attempt']}{retry}, "
                f"{r['host']}, {r['seconds']:.1f}s] {r['summary'] or '(no summary line)'}"
            )
        return results

    def driver_step(self, stage, stage_args, flags, ok_codes=(EXIT_OK,)):
        """A driver-side step (`--cutoff`, `--commit`): runs the binary here; its stderr
        goes to ours (the commit's summary line is the stage's). Returns (code, stdout)."""
        argv = self.command(stage, stage_args) + list(flags)
        if self.verbose:
            self.say(f"  $ {shlex.join(argv)}")
        with tempfile.TemporaryDirectory(prefix="trawl-driver-") as work:
            if is_object_store(self.crawl_dir):
                argv += ["--work-dir", work]
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
            )
        sys.stderr.flush()
        if proc.returncode not in ok_codes:
            raise StepFailed(
                proc.returncode if proc.returncode > 0 else EXIT_ERROR,
                f"{stage} {' '.join(flags)} failed with exit code {proc.returncode}: "
                f"{shlex.join(argv)}",
            )
        return proc.returncode, proc.stdout

    def stage(self, stage, stage_args, label, ok=(EXIT_OK,)):
        """A partitioned stage: tasks over every partition set, then the commit; `ok`
        are the exit codes of its tasks and its commit that are not failures."""
        job = new_job_id(f"{label}-{stage}")
        specs = partition_sets(self.partitions(), self.tasks)
        self.say(f"{stage}: job {job}, {len(specs)} tasks over {self.partitions()} partitions")
        self.spark_tasks(stage, "tasks", stage_args, job, specs, ok)
        code, _ = self.driver_step(stage, stage_args, ["--job", job, "--commit"], ok)
        return code

    def inject(self, seeds, extra):
        stage_args = [resolve_location(s) for s in seeds] + extra
        return self.stage("inject", stage_args, "inject")

    def generate(self, label, stage_args):
        """generate: histogram pass, cut-off, select pass, commit. Returns the new
        segment's path, or None when nothing is due."""
        job = new_job_id(f"{label}-generate")
        specs = partition_sets(self.partitions(), self.tasks)
        self.say(f"generate: job {job}, {len(specs)} tasks over {self.partitions()} partitions")
        # A task's partitions may have nothing due; only the commit decides (exit 3).
        ok = (EXIT_OK, EXIT_NOTHING_DUE)
        self.spark_tasks("generate", "pass histogram", stage_args, job, specs, ok, ["--pass", "histogram"])
        self.driver_step("generate", stage_args, ["--job", job, "--cutoff"])
        self.spark_tasks("generate", "pass select", stage_args, job, specs, ok, ["--pass", "select"])
        code, out = self.driver_step(
            "generate", stage_args, ["--job", job, "--commit"], (EXIT_OK, EXIT_NOTHING_DUE)
        )
        if code == EXIT_NOTHING_DUE:
            return None
        lines = out.strip().splitlines()
        if not lines:
            raise StepFailed(EXIT_ERROR, f"generate --job {job} --commit printed no segment")
        return lines[-1].strip()

    def pagerank(self, label, stage_args):
        """pagerank: one scores task over all partitions, rewrite tasks, commit."""
        job = new_job_id(f"{label}-pagerank")
        specs = partition_sets(self.partitions(), self.tasks)
        self.say(f"pagerank: job {job}, 1 scores task, then {len(specs)} rewrite tasks")
        # The scores pass is one task over every partition (the whole graph).
        self.spark_tasks("pagerank", "pass scores", stage_args, job, ["all"], extra=["--pass", "scores"])
        self.spark_tasks("pagerank", "pass rewrite", stage_args, job, specs, extra=["--pass", "rewrite"])
        code, _ = self.driver_step("pagerank", stage_args, ["--job", job, "--commit"])
        return code

    def round(self, number, flags, sitemaps=False, warc=False):
        """One round; returns its exit code (0, 3 nothing due, 5 unreachable). With
        `sitemaps`, sitemap tasks first; with `warc`, the segment's WARC export last."""
        label = f"r{number}"
        if sitemaps:
            self.stage("sitemap", flags["sitemap"], label)
        segment = self.generate(label, flags["generate"])
        if segment is None:
            self.say("round: no URLs are due")
            return EXIT_NOTHING_DUE
        if is_object_store(self.crawl_dir):
            # The commit printed its scratch mirror's path: stages name it by name.
            segment = os.path.basename(segment.rstrip("/"))
        self.say(f"round {number}: segment {segment}")
        code = self.stage("fetch", [segment] + flags["fetch"], label, (EXIT_OK, EXIT_UNREACHABLE))
        for stage in ["parse", "updatedb", "linkdb"]:
            self.stage(stage, [segment] + flags[stage], label)
        if code == EXIT_UNREACHABLE:
            self.say(
                f"round: WARNING: fetch reached no server (exit code 5): every URL of {segment} "
                "failed to connect; the failures are recorded in the crawldb; pagerank skipped"
            )
            return EXIT_UNREACHABLE
        self.pagerank(label, flags["pagerank"])
        if warc:
            self.stage("warc", [segment] + flags["warc"], label)
        return EXIT_OK


def round_flags(args):
    """Each round stage's extra flags: --X-flags, generate's --top-n, and the time
    limit of the fetch and sitemap tasks (their leases' length)."""
    flags = {stage: shlex.split(getattr(args, f"{stage}_flags")) for stage in ROUND_STAGES}
    if args.top_n is not None:
        flags["generate"] = ["--top-n", str(args.top_n)] + flags["generate"]
    limit = args.fetch_time_limit or config_time_limit(args.config) or DEFAULT_FETCH_TIME_LIMIT
    for stage in ["fetch", "sitemap"]:
        if "--time-limit" not in flags[stage]:
            flags[stage] += ["--time-limit", f"{limit:g}"]
    return flags


def config_time_limit(config):
    """fetch.time_limit of the TOML config (None when unset, 0 or unreadable)."""
    if not config:
        return None
    try:
        import tomllib

        with open(config, "rb") as f:
            value = tomllib.load(f).get("fetch", {}).get("time_limit", 0)
        return float(value) if float(value) > 0 else None
    except (OSError, ValueError, TypeError):
        return None


def first_line_of_cause(e):
    """The useful line of a failed Spark job's exception: the task's RuntimeError."""
    text = str(e)
    for line in text.splitlines():
        if "RuntimeError:" in line:
            return line.split("RuntimeError:", 1)[1].strip()
    return text.splitlines()[0] if text else repr(e)


# ---------------------------------------------------------------------------------
# Command line and Spark session.


def parse_args(argv):
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--master", help="Spark master URL (else spark-submit's --master)")
    common.add_argument("--crawl-dir", required=True, help="the crawl directory or URI, the same on every node")
    common.add_argument("--config", help="the TOML configuration, the same path on every node")
    common.add_argument(
        "--bin-dir",
        default=os.path.join(REPO, "target", "release"),
        help="directory of trawl's binaries on every node (default: %(default)s)",
    )
    common.add_argument(
        "--task-bin-dir",
        help="the binaries' directory as the tasks see it, taken as given (default: --bin-dir); "
        "a relative path is the executor's working directory's, e.g. `trawl` for "
        "spark-submit --archives trawl-bin.tar.gz#trawl",
    )
    common.add_argument(
        "--task-config",
        help="the config as the tasks see it, taken as given (default: --config); e.g. "
        "`trawl.toml` for spark-submit --files /path/to/trawl.toml",
    )
    common.add_argument(
        "--tasks",
        type=int,
        help="partition sets per stage, one Spark task each (default: the crawl's partition count)",
    )
    common.add_argument(
        "--partitions",
        type=int,
        help="the crawl's partition count, when the driver cannot read crawldb/current/_meta.json",
    )
    common.add_argument("--verbose", action="store_true", help="print each driver-side command")

    parser = argparse.ArgumentParser(
        prog="trawl_spark.py", description=__doc__.split("\n\n", 1)[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    inj = sub.add_parser("inject", parents=[common], help="inject seed files as Spark tasks")
    inj.add_argument("seeds", nargs="+", help="seed files (one URL a line), the same path on every node")
    inj.add_argument("--inject-flags", default="", help="extra inject flags (one shell-quoted string)")
    rnd = sub.add_parser("round", parents=[common], help="crawl rounds as Spark jobs")
    rnd.add_argument("--rounds", type=int, default=1, help="rounds to run (default 1)")
    rnd.add_argument("--top-n", type=int, help="generate --top-n")
    rnd.add_argument(
        "--fetch-time-limit",
        type=float,
        help="fetch tasks' time limit in seconds, which is also how long their partitions' "
        "leases last (a retry takes over a lost attempt's lease after it); default: "
        f"fetch.time_limit of --config when set, else {DEFAULT_FETCH_TIME_LIMIT:.0f}",
    )
    rnd.add_argument(
        "--sitemaps",
        action="store_true",
        help="start every round with sitemap tasks (their time limit is the fetch tasks')",
    )
    rnd.add_argument("--warc", action="store_true", help="end every round with its segment's WARC export")
    for stage in ROUND_STAGES:
        rnd.add_argument(
            f"--{stage}-flags", default="", help=f"extra {stage} flags (one shell-quoted string)"
        )
    wrc = sub.add_parser("warc", parents=[common], help="export segments as WARC files with Spark tasks")
    wrc.add_argument("segments", nargs="+", help="segment names or paths, exported one after the other")
    wrc.add_argument("--warc-flags", default="", help="extra warc flags (one shell-quoted string)")
    return parser.parse_args(argv)


def spark_context(args):
    from pyspark import SparkConf, SparkContext

    conf = SparkConf().setAppName(f"trawl {args.command}")
    if args.master:
        conf.setMaster(args.master)
    # A task per partition set, retried by Spark; never two attempts at once on purpose.
    conf.set("spark.speculation", "false")
    conf.setIfMissing("spark.task.maxFailures", "4")
    conf.setIfMissing("spark.locality.wait", "0s")
    conf.setIfMissing("spark.ui.showConsoleProgress", "false")
    if is_object_store(args.crawl_dir):
        # The executors' binaries reach the store with the driver's credentials
        # and endpoint (AWS_*, GOOGLE_*, AZURE_* of the driver's environment).
        for key, value in os.environ.items():
            if key.startswith(OBJECT_STORE_ENV):
                conf.setIfMissing(f"spark.executorEnv.{key}", value)
    local_ip = os.environ.get("SPARK_LOCAL_IP")
    if local_ip:
        conf.setIfMissing("spark.driver.host", local_ip)
        conf.setIfMissing("spark.driver.bindAddress", local_ip)
    sc = SparkContext(conf=conf)
    sc.setLogLevel(os.environ.get("TRAWL_SPARK_LOG_LEVEL", "WARN"))
    return sc


def main(argv):
    args = parse_args(argv)
    if args.tasks is not None and args.tasks < 1:
        print(f"trawl_spark: --tasks must be at least 1, not {args.tasks}", file=sys.stderr)
        return 2
    started = time.monotonic()
    sc = spark_context(args)
    try:
        driver = Driver(sc, args)
        if driver.tasks is None:
            driver.tasks = driver.partitions()
        if args.command == "inject":
            driver.inject(args.seeds, shlex.split(args.inject_flags))
            code = EXIT_OK
        elif args.command == "warc":
            extra = shlex.split(args.warc_flags)
            for segment in args.segments:
                # A bare name is one under the crawl's segments/; a path is made absolute.
                where = resolve_location(segment) if os.sep in segment else segment
                driver.stage("warc", [where] + extra, "warc")
            code = EXIT_OK
        else:
            flags = round_flags(args)
            code = EXIT_OK
            for number in range(1, args.rounds + 1):
                driver.say(f"== round {number} of {args.rounds} (Spark master {sc.master})")
                code = driver.round(number, flags, args.sitemaps, args.warc)
                if code == EXIT_NOTHING_DUE:
                    driver.say(f"trawl_spark: nothing left to crawl after {number - 1} rounds")
                    break
                if code != EXIT_OK:
                    break
        driver.say(f"trawl_spark: {args.command} done in {time.monotonic() - started:.1f}s")
        return code
    except StepFailed as e:
        print(f"trawl_spark: {e}", file=sys.stderr, flush=True)
        return e.code
    finally:
        sc.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
