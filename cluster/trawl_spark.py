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

What a round runs is not spelled here: the driver asks trawl (`trawl plan round`,
docs/cluster.md "The plan") and gets every step of the round `crawl` runs in one
process, in the same order (generate, fetch, parse, updatedb, linkdb, dedup, pagerank,
sitemap, hostdb, index), each with its units (partition tasks and their passes,
driver-side steps, the commit, or the stage run whole as one task when it has no
partition tasks yet), the exit codes that are not failures, the codes that are
outcomes of the round (nothing due ends the rounds; no server reached runs the steps
that record failures, then stops), which steps hold fetch leases (their tasks get a
time limit, the lease's length) and the crawl's partition count. With --warc the round
ends with the segment's WARC export; `warc SEGMENT...` exports given segments the same
way. Any other failure stops with the failed step's exit code (1 when a Spark job
failed after its retries).

The binaries must exist at the same path on every node (--bin-dir, default: the
checkout's target/release) and --crawl-dir and --config must name the same data on
every node: relative local paths are made absolute against the driver's directory.
"""

import argparse
import hashlib
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

# The driver's own exit codes: a Spark job failed after its retries; a usage error.
# Every other code is a step's own, passed on.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
# What a round that ends after fetch reached no server exits with, when the driver
# that saw fetch's own code was lost (trawl plan next says so: `unreachable`).
EXIT_UNREACHABLE = 5

# The stages with an extra-flags option (--X-flags) on the command line; which of them
# a round runs, and how, is the plan's.
FLAG_STAGES = [
    "generate", "fetch", "parse", "updatedb", "linkdb", "dedup", "pagerank", "sitemap",
    "hostdb", "index", "warc",
]
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


def default_progress_file(crawl_dir):
    """Where the driver keeps a round's progress by default: a file of its own, named
    after the crawl directory, under $XDG_STATE_HOME (else ~/.local/state)/trawl."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    key = hashlib.sha256(crawl_dir.encode()).hexdigest()[:16]
    path = os.path.join(state, "trawl", f"spark-round-{key}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def is_object_store(crawl_dir):
    """Whether the crawl directory is an object-store URI (s3://, gs://, az://, ...):
    then every task and driver step runs on a scratch mirror of its own."""
    return "://" in crawl_dir


def trawl_command(bin_dir, stage, crawl_dir, config, stage_args=()):
    """The command line of `trawl STAGE` on `crawl_dir`, without task flags."""
    argv = [os.path.join(bin_dir, "trawl"), stage, "--crawl-dir", crawl_dir]
    if config:
        argv += ["--config", config]
    return argv + list(stage_args)


def read_plan(bin_dir, crawl_dir, config, plan_args=(), what="round"):
    """What a round runs, as trawl says (docs/cluster.md, "The plan"): `trawl plan
    round` (the steps and the partition count) or `trawl plan next` (the one step to
    run now)."""
    argv = trawl_command(bin_dir, "plan", crawl_dir, config, [what] + list(plan_args))
    with tempfile.TemporaryDirectory(prefix="trawl-driver-") as work:
        if is_object_store(crawl_dir):
            argv += ["--work-dir", work]
        try:
            proc = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True,
            )
        except OSError as e:
            raise StepFailed(
                EXIT_ERROR,
                f"cannot run {argv[0]}: {e}; give --bin-dir (the directory of trawl's binary)",
            ) from e
    if proc.returncode != 0:
        raise StepFailed(
            proc.returncode if proc.returncode > 0 else EXIT_ERROR,
            f"cannot read the round's plan: {shlex.join(argv)}\n{tail(proc.stderr)}",
        )
    try:
        plan = json.loads(proc.stdout)
    except ValueError as e:
        raise StepFailed(EXIT_ERROR, f"{shlex.join(argv)} printed no JSON plan: {e}") from e
    if plan.get("plan_version") != 1:
        raise StepFailed(
            EXIT_ERROR,
            f"plan version {plan.get('plan_version')!r} of {argv[0]} is not 1: this driver and "
            "the binary are from different versions of trawl",
        )
    return plan


def describe_units(step, specs, partitions):
    """The line that announces a step: its job and how its units run."""
    parts = []
    for unit in step["units"]:
        if unit["run"] == "tasks":
            what = " ".join(unit["flags"]).replace("--pass ", "pass ") or "tasks"
            n = 1 if unit["all"] else len(specs)
            why = unit.get("why") or "not partitioned yet"
            over = f"every partition ({why})" if unit["all"] else f"{partitions} partitions"
            tasks = f"{n} task" if n == 1 else f"{n} tasks"
            parts.append(f"{what}: {tasks} over {over}" if what != "tasks" else f"{tasks} over {over}")
        elif unit["run"] == "iterate":
            what = " ".join(unit["flags"]).replace("--pass ", "pass ")
            then = " ".join(unit["then"]).replace("--pass ", "pass ")
            check = " ".join(unit["check"]).lstrip("-")
            tasks = f"{len(specs)} task" if len(specs) == 1 else f"{len(specs)} tasks"
            parts.append(
                f"{what}: {tasks} over {partitions} partitions per iteration until the {check} "
                f"in the driver stops it, then {then}: {tasks}"
            )
        elif unit["run"] == "driver":
            parts.append(" ".join(unit["flags"]).lstrip("-") + " in the driver")
        elif unit["run"] == "commit":
            parts.append("commit")
        elif unit["run"] == "whole":
            parts.append("1 task running the whole stage (not partitioned yet)")
    return ", ".join(parts)


# ---------------------------------------------------------------------------------
# Running binaries: on the executors (tasks) and in the driver (driver-side steps).


def _die_with_parent(parent):
    """For the child before exec: get SIGTERM when the Python worker `parent` that
    started the binary dies (Spark killed the task or the executor), so no binary
    outlives its task by more than the binary's own stop at a signal; if it died
    already (between the fork and here), exit at once."""

    def arm():
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
        except OSError:
            pass  # not Linux: the binary may outlive a killed task (leases still guard)
        if os.getppid() != parent:
            os._exit(1)

    return arm


def make_task(stage, command, crawl_dir, job, ok_codes, extra_flags=()):
    """The function a Spark task runs on its executor for one `(index, spec)` element:
    run `command + task flags + extra_flags` (no task flags when `job` is None: the
    stage runs whole), raise on a non-zero exit (Spark retries the task), return what
    the driver prints."""

    def run(element):
        from pyspark import TaskContext

        _index, spec = element
        ctx = TaskContext.get()
        attempt = attempt_id(ctx.stageId(), ctx.partitionId(), ctx.attemptNumber())
        flags = task_flags(job, spec, attempt) if job else []
        argv = command + flags + list(extra_flags)
        started = time.monotonic()
        # On an object store the task runs on a scratch mirror of its own under the
        # worker's local dir, removed when the task ends.
        work = None
        if is_object_store(crawl_dir):
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
                # Its own session: the binary's life is bound to its task by the
                # parent-death signal alone, not by the worker's process group (whose
                # SIGHUP, and the kernel's SIGHUP + SIGCONT to a stopped process in a
                # group orphaned when the worker dies, would wake a frozen binary).
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
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
                f"{stage} task {'--partitions ' + spec if job else '(whole stage)'} --attempt {attempt} on "
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
        # The round's progress, kept by trawl (`plan done`) between the steps, so that
        # a driver restarted with the same file goes on where the lost one stopped.
        self.progress_file = getattr(args, "progress", None)

    def command(self, stage, stage_args, task=False):
        """A stage's command line without the task flags, for a task or the driver."""
        bin_dir, config = (self.task_bin_dir, self.task_config) if task else (self.bin_dir, self.config)
        return trawl_command(bin_dir, stage, self.crawl_dir, config, stage_args)

    def say(self, text):
        print(text, flush=True)

    def plan(self, plan_args=(), what="round"):
        """The round's plan (`trawl plan round`, or `plan next`: its next step);
        --partitions overrides its count."""
        plan = read_plan(self.bin_dir, self.crawl_dir, self.config, plan_args, what)
        if self.partitions_override is not None:
            plan["partitions"] = self.partitions_override
        return plan

    def run_job(self, stage, what, command, job, specs, ok_codes=(EXIT_OK,), extra=(), whole=False):
        """One Spark job: a task per partition set running `command` + task flags +
        `extra` (with `whole`, one task running `command` alone). Returns the tasks'
        results."""
        group = f"{job}-{what.replace(' ', '-')}"
        self.sc.setJobGroup(group, f"trawl {stage} {what} (job {job}, {len(specs)} tasks)")
        rdd = self.sc.parallelize(list(enumerate(specs)), len(specs))
        done = threading.Event()
        progress = threading.Thread(
            target=self.progress, args=(stage, what, group, done), daemon=True
        )
        progress.start()
        try:
            task = make_task(stage, command, self.crawl_dir, None if whole else job, set(ok_codes), extra)
            return rdd.map(task).collect()
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

    def spark_tasks(self, stage, what, stage_args, job, specs, ok_codes=(EXIT_OK,), extra=(), whole=False):
        """A stage's Spark job: a task per partition set (with `whole`, one task running
        the stage whole). Prints each task's summary line."""
        started = time.monotonic()
        results = self.run_job(
            stage, what, self.command(stage, stage_args, task=True), job, specs, ok_codes, extra, whole
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

    def step(self, step, stage_args, label, partitions):
        """One step of the plan: its units in order (partition tasks, driver-side
        steps, the commit, or the stage whole as one task). Returns (exit code, stdout)
        of its last unit."""
        stage = step["stage"]
        ok = tuple(step["ok"])
        job = new_job_id(f"{label}-{stage}")
        specs = partition_sets(partitions, self.tasks)
        self.say(f"{stage}: job {job}, {describe_units(step, specs, partitions)}")
        code, out = EXIT_OK, ""
        for unit in step["units"]:
            run = unit["run"]
            if run == "tasks":
                what = " ".join(unit["flags"]).replace("--pass ", "pass ") or "tasks"
                sets = ["all"] if unit["all"] else specs
                self.spark_tasks(stage, what, stage_args, job, sets, ok, unit["flags"])
            elif run == "iterate":
                self.iterate(stage, stage_args, job, specs, ok, unit)
            elif run == "driver":
                self.driver_step(stage, stage_args, ["--job", job] + unit["flags"])
            elif run == "commit":
                code, out = self.driver_step(stage, stage_args, ["--job", job, "--commit"], ok)
            elif run == "whole":
                results = self.spark_tasks(stage, "whole", stage_args, job, ["whole"], ok, whole=True)
                code = results[0]["code"]
            else:
                raise StepFailed(EXIT_ERROR, f"{stage}: unit {run!r} of the plan is not known to this driver")
        return code, out

    def iterate(self, stage, stage_args, job, specs, ok, unit):
        """An `iterate` unit: its tasks once per iteration (`--iteration K`, K = 0, 1,
        ...), after each the check in the driver, whose JSON line says whether to run
        another; then the `then` tasks with the last K."""
        k = 0
        while True:
            flags = list(unit["flags"]) + ["--iteration", str(k)]
            what = " ".join(flags).replace("--pass ", "pass ").replace("--iteration ", "iteration ")
            self.spark_tasks(stage, what, stage_args, job, specs, ok, flags)
            _, out = self.driver_step(
                stage, stage_args, ["--job", job] + list(unit["check"]) + ["--iteration", str(k)]
            )
            lines = out.strip().splitlines()
            try:
                verdict = json.loads(lines[-1])
                again = bool(verdict["again"])
                delta = float(verdict.get("delta") or 0.0)
            except (IndexError, ValueError, KeyError, TypeError, AttributeError) as e:
                raise StepFailed(
                    EXIT_ERROR,
                    f"{stage} {' '.join(unit['check'])} --iteration {k} printed no verdict "
                    f"(a JSON line with \"again\"): {out!r} ({e})",
                )
            self.say(
                f"  {stage} iteration {k}: L1 change {delta:.3e}"
                + (", again" if again else ", stopped")
            )
            if not again:
                break
            k += 1
        flags = list(unit["then"]) + ["--iteration", str(k)]
        what = " ".join(flags).replace("--pass ", "pass ").replace("--iteration ", "iteration ")
        self.spark_tasks(stage, what, stage_args, job, specs, ok, flags)

    def job(self, stage, stage_args, label, plan):
        """A stage run as a job of its own (inject, warc): its plan step."""
        step = plan["jobs"][stage]
        code, _ = self.step(step, stage_args, label, plan["partitions"])
        return code

    def progress_path(self):
        """The round's progress file: --progress, else the driver's own default."""
        if self.progress_file is None:
            self.progress_file = default_progress_file(self.crawl_dir)
        return self.progress_file

    def record(self, stage, segments, code=None):
        """Tells trawl that `stage` ended with exit code `code` (on `segments`, or having
        made them): `trawl plan done` records it in the round's progress file and says
        what the code means for the round. Without a code: the round is over, the file
        goes. Returns the outcome (`nothing_due`, `unreachable`) or None."""
        if code is None:
            args = ["--progress", self.progress_path(), "--round-over"]
        else:
            args = ["--progress", self.progress_path(), "--done", stage, "--exit", str(code)]
            args += [a for s in segments for a in ("--segment", s)]
        return self.plan(args, what="done")["outcome"]

    def round(self, number, plan_args, flags):
        """One round, a step at a time as trawl says (`trawl plan next`, given the
        round's progress, which `trawl plan done` keeps in the progress file after each
        step): the pending segments' steps first, then the rest of a round a lost
        driver left in the progress file, else generate, then the steps over the whole
        crawl. Returns its exit code and outcome: (0, None), or the code of an outcome
        and its name (`nothing_due`, `unreachable`)."""
        label = f"r{number}"
        stopped, last, segments = None, None, set()
        while True:
            plan = self.plan(list(plan_args) + ["--progress", self.progress_path()], what="next")
            if plan["next"] is None:
                if plan.get("unreachable") and stopped is None:
                    stopped = EXIT_UNREACHABLE
                break
            step, segment = plan["next"]["step"], plan["next"]["segment"]
            stage = step["stage"]
            if (stage, segment) == last:
                # It ran and succeeded, yet its work is not there: never loop on it.
                raise StepFailed(
                    EXIT_ERROR,
                    f"{stage} ran on {segment or 'the crawl'} but trawl plan next gives it again "
                    "(its output is not in the crawl directory); stopping the round",
                )
            last = (stage, segment)
            stage_args = list(flags.get(stage, []))
            if step["leases"] and "--time-limit" not in stage_args:
                stage_args += ["--time-limit", f"{flags['time_limit']:g}"]
            on = []
            if segment is not None:
                stage_args = [segment] + stage_args
                on = [segment]
            code, out = self.step(step, stage_args, label, plan["partitions"])
            if step["segment"] == "makes" and code == EXIT_OK:
                lines = out.strip().splitlines()
                if not lines:
                    raise StepFailed(EXIT_ERROR, f"{stage} --commit printed no segment")
                # The commit printed the segment's path (on an object store its scratch
                # mirror's): the round names it by name.
                on = [os.path.basename(lines[-1].strip().rstrip("/"))]
            for s in on:
                if s not in segments:
                    segments.add(s)
                    self.say(f"round {number}: segment {s}")
            what = self.record(stage, on, code)
            if what == "nothing_due":
                # trawl removed the progress file: the round does not happen.
                self.say("round: no URLs are due")
                return code, what
            if what == "unreachable":
                stopped = code
                self.say(
                    f"round: WARNING: fetch reached no server (exit code {code}): every URL of "
                    f"{segment} failed to connect; the steps that record the failures run, then "
                    "the crawl stops"
                )
        self.record(None, [])
        if stopped is not None:
            return stopped, "unreachable"
        return EXIT_OK, None


def round_flags(args):
    """Each stage's extra flags (--X-flags, generate's --top-n) and `time_limit`: the
    time limit of the tasks that hold fetch leases (the leases' length)."""
    flags = {stage: shlex.split(getattr(args, f"{stage}_flags")) for stage in FLAG_STAGES}
    if args.top_n is not None:
        flags["generate"] = ["--top-n", str(args.top_n)] + flags["generate"]
    flags["time_limit"] = (
        args.fetch_time_limit or config_time_limit(args.config) or DEFAULT_FETCH_TIME_LIMIT
    )
    return flags


def plan_args(args):
    """`trawl plan round` options from the driver's."""
    out = []
    if getattr(args, "warc", False):
        out.append("--warc")
    if getattr(args, "no_dedup", False):
        out.append("--no-dedup")
    if getattr(args, "no_index", False):
        out.append("--no-index")
    return out


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
        help="directory of trawl's binary (`trawl`) on every node (default: %(default)s)",
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
        help="the crawl's partition count (default: the plan's, `trawl plan round`: the crawldb's, "
        "else crawl.partitions of --config)",
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
    rnd.add_argument(
        "--progress",
        help="the file where trawl keeps the round's progress between its steps (`trawl plan "
        "done`); a driver restarted with the same file finishes the lost driver's round "
        "(default: spark-round-<hash of --crawl-dir>.json under $XDG_STATE_HOME/trawl, "
        "else ~/.local/state/trawl)",
    )
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
        help="kept for old command lines: every round runs the sitemap step now, as `crawl` does",
    )
    rnd.add_argument("--warc", action="store_true", help="end every round with its segment's WARC export")
    rnd.add_argument("--no-dedup", action="store_true", help="leave dedup out of the rounds (as crawl --no-dedup)")
    rnd.add_argument("--no-index", action="store_true", help="leave the search index out of the rounds (as crawl --no-index)")
    for stage in FLAG_STAGES:
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
        return EXIT_USAGE
    started = time.monotonic()
    sc = spark_context(args)
    try:
        driver = Driver(sc, args)
        plan = driver.plan(plan_args(args))
        if driver.tasks is None:
            driver.tasks = plan["partitions"]
        if args.command == "inject":
            stage_args = [resolve_location(s) for s in args.seeds] + shlex.split(args.inject_flags)
            code = driver.job("inject", stage_args, "inject", plan)
        elif args.command == "warc":
            extra = shlex.split(args.warc_flags)
            code = EXIT_OK
            for segment in args.segments:
                # A bare name is one under the crawl's segments/; a path is made absolute.
                where = resolve_location(segment) if os.sep in segment else segment
                code = driver.job("warc", [where] + extra, "warc", plan)
        else:
            flags = round_flags(args)
            code = EXIT_OK
            for number in range(1, args.rounds + 1):
                driver.say(f"== round {number} of {args.rounds} (Spark master {sc.master})")
                code, what = driver.round(number, plan_args(args), flags)
                if what == "nothing_due":
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
