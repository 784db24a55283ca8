//! Partition tasks and their commit: the storage side of running a stage as N
//! independent tasks plus one commit (on a cluster, or in one process).
//!
//! ```text
//! <crawl>/_jobs/<job>/                      one run of a stage (the driver names it)
//! <crawl>/_jobs/<job>/<pset>/<attempt>/     a finished attempt of the task on <pset>
//! <crawl>/_jobs/<job>/<pset>/<attempt>.tmp-<nonce>/   an attempt being written
//! <crawl>/_jobs/<job>/<file>                job-level files (generate's cut-off, ...)
//! ```
//!
//! A task writes only under its own attempt directory ([`AttemptWriter`]): one
//! subdirectory per dataset it produces, each sealed with its manifest, then the
//! task's report (`_report.json`), then one rename makes the attempt finished. A
//! zombie and its retry have different attempt ids and never touch each other's
//! files; a rerun of the same attempt id finds it finished and drops its own output.
//!
//! The commit ([`Job::choose`]) takes, for every distinct partition set, the finished
//! attempt with the smallest id, checks that the chosen sets are disjoint and cover
//! every partition, and links their parts into the staged new version
//! ([`link_part`]): data is never rewritten at commit, and the attempts are kept
//! until the version is installed, so a killed commit can simply be rerun. Running a
//! task twice can therefore never duplicate or lose rows.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::integrity;
use super::names;
use super::parquet;
use super::storage::LocalFs;
use crate::error::{Error, IoContext, Result};

/// The directory-name prefix of a shuffle pass inside a job ([`Job::shuffle`]).
pub const SHUFFLE_PREFIX: &str = "shuffle.";

/// The longest job id.
const MAX_JOB_LEN: usize = 80;
/// The longest attempt id.
const MAX_ATTEMPT_LEN: usize = 64;

/// A set of partition indices a task works on (`3`, `3-5`, `0,2,7-9`), kept as
/// sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionSet {
    ranges: Vec<(usize, usize)>,
}

impl PartitionSet {
    /// Every partition of `n`.
    pub fn all(n: usize) -> Self {
        PartitionSet {
            ranges: if n == 0 { Vec::new() } else { vec![(0, n - 1)] },
        }
    }

    /// Parses a `--partitions` value: comma-separated indices and inclusive ranges
    /// (`3`, `3-5`, `0,2,7-9`). The error says what was wrong with `spec`.
    pub fn parse(spec: &str) -> std::result::Result<Self, String> {
        if spec.trim() == "all" {
            // Every partition, whatever their number: see [`PartitionSet::resolve`].
            return Ok(PartitionSet {
                ranges: vec![(0, usize::MAX)],
            });
        }
        let mut ranges = Vec::new();
        for item in spec.split(',').map(str::trim) {
            let num = |s: &str| {
                s.trim().parse::<usize>().map_err(|_| {
                    format!(
                        "`{spec}` is not a partition list: `{s}` is not a number \
                         (write e.g. `3`, `3-5` or `0,2,7-9`)"
                    )
                })
            };
            let (a, b) = match item.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => {
                    let a = num(item)?;
                    (a, a)
                }
            };
            if a > b {
                return Err(format!(
                    "`{spec}` is not a partition list: the range `{item}` is backwards"
                ));
            }
            ranges.push((a, b));
        }
        Ok(Self::from_ranges(ranges))
    }

    fn from_ranges(mut ranges: Vec<(usize, usize)>) -> Self {
        ranges.sort_unstable();
        let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match out.last_mut() {
                Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        PartitionSet { ranges: out }
    }

    /// The set for a dataset of `n` partitions: `all` (parsed as 0 to the largest
    /// index) becomes every partition of `n`; any other set is kept as it is.
    pub fn resolve(&self, n: usize) -> PartitionSet {
        if self.ranges == [(0, usize::MAX)] {
            Self::all(n)
        } else {
            self.clone()
        }
    }

    /// Whether partition `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= i && i <= b)
    }

    /// The partitions in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.ranges.iter().flat_map(|&(a, b)| a..=b)
    }

    /// How many partitions the set holds.
    pub fn len(&self) -> usize {
        self.ranges.iter().map(|&(a, b)| b - a + 1).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether the set is every partition of `n`.
    pub fn is_all(&self, n: usize) -> bool {
        self == &Self::all(n)
    }

    /// Refuses a set naming a partition `>= n` (the dataset has `n` parts).
    pub fn check_within(&self, n: usize, what: &str) -> Result<()> {
        match self.ranges.last() {
            Some(&(_, b)) if b >= n => Err(Error::input(
                format!("--partitions {self}"),
                format!(
                    "{what} has {n} partitions (0-{}); name partitions below {n}",
                    n.saturating_sub(1)
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The canonical directory name of the set (`p00003-00005`,
    /// `p00000_00002_00007-00009`).
    pub fn dir_name(&self) -> String {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    format!("{a:05}")
                } else {
                    format!("{a:05}-{b:05}")
                }
            })
            .collect();
        format!("p{}", parts.join("_"))
    }

    /// Parses a [`PartitionSet::dir_name`].
    pub fn from_dir_name(name: &str) -> Option<Self> {
        let body = name.strip_prefix('p')?;
        Self::parse(&body.replace('_', ",")).ok()
    }
}

impl fmt::Display for PartitionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Checks a job or attempt id: `[A-Za-z0-9._-]`, not empty, at most `max` bytes,
/// not starting with a dot.
fn check_id(kind: &str, id: &str, max: usize) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= max
        && !id.starts_with('.')
        && !id.contains(".tmp-")
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::input(
            format!("--{kind} `{id}`"),
            format!("use 1 to {max} characters among A-Z a-z 0-9 . _ - (not starting with a dot)"),
        ))
    }
}

/// Checks a `--job` id.
pub fn check_job_id(id: &str) -> Result<()> {
    if id == names::FETCH_CHECKPOINTS {
        return Err(Error::input(
            format!("--job `{id}`"),
            "the name of fetch's checkpoint directory (_jobs/fetch-checkpoints/); choose another",
        ));
    }
    check_id("job", id, MAX_JOB_LEN)
}

/// Checks an `--attempt` id.
pub fn check_attempt_id(id: &str) -> Result<()> {
    check_id("attempt", id, MAX_ATTEMPT_LEN)
}

/// The name of an attempt's report file (its done marker).
pub(super) const REPORT: &str = "_report.json";

/// One run of a stage, as partition tasks plus a commit (see the module doc).
#[derive(Debug, Clone)]
pub struct Job {
    id: String,
    dir: PathBuf,
}

impl Job {
    /// The job `id` of the crawl directory at `root` (nothing is created).
    pub fn open(root: &Path, id: &str) -> Result<Self> {
        check_job_id(id)?;
        Ok(Job {
            id: id.to_string(),
            dir: root.join(names::JOBS).join(id),
        })
    }

    /// A private job for a one-process run of `stage` (the same code path as a
    /// cluster run: one task over every partition, then the commit).
    pub fn local(root: &Path, stage: &str) -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let id = format!("{stage}-local-{}-{nanos:x}", std::process::id());
        Self::open(root, &id)
    }

    /// The job's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sub-job of pass `name` (`<job>/pass.<name>/`) of a stage whose tasks run
    /// in several passes (generate's histogram and select, pagerank's scores and
    /// rewrite, dedup's signatures and rewrite): its attempts are chosen apart from
    /// the other passes', and it goes with the job's [`Job::remove`].
    pub fn pass(&self, name: &str) -> Job {
        Job {
            id: format!("{}/{name}", self.id),
            dir: self.dir.join(format!("pass.{name}")),
        }
    }

    /// The sub-job of a shuffle pass `name` (`<job>/shuffle.<name>/`): as
    /// [`Job::pass`], but each attempt writes parts for every partition of the next
    /// pass (`part-0000j.parquet` for partition or bucket `j`), which a task of that
    /// pass reads from every attempt, whatever partition set wrote it (dedup's keys and
    /// groups). On an object store a task downloads those parts of its own partitions
    /// from every attempt of the shuffle ([`SHUFFLE_PREFIX`]).
    pub fn shuffle(&self, name: &str) -> Job {
        Job {
            id: format!("{}/{name}", self.id),
            dir: self.dir.join(format!("{SHUFFLE_PREFIX}{name}")),
        }
    }

    /// A job-level file (`<job>/<name>`), e.g. generate's cut-off.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Starts attempt `attempt` of the task on `pset`: a fresh private directory.
    pub fn attempt_writer(&self, pset: &PartitionSet, attempt: &str) -> Result<AttemptWriter> {
        check_attempt_id(attempt)?;
        if pset.is_empty() {
            return Err(Error::input("--partitions", "names no partition"));
        }
        let set_dir = self.dir.join(pset.dir_name());
        let tmp = set_dir.join(format!("{attempt}.tmp-{}", nonce()));
        LocalFs.create_dir(&tmp)?;
        Ok(AttemptWriter {
            tmp,
            dest: set_dir.join(attempt),
            pset: pset.clone(),
            attempt: attempt.to_string(),
            done: false,
        })
    }

    /// Every finished attempt of the job, sorted by partition set and attempt id.
    pub fn finished(&self) -> Result<Vec<FinishedAttempt>> {
        let mut out = Vec::new();
        for set_dir in LocalFs.list(&self.dir)? {
            let Some(pset) = file_name(&set_dir).and_then(|n| PartitionSet::from_dir_name(&n))
            else {
                continue;
            };
            if !set_dir.is_dir() {
                continue;
            }
            for a in LocalFs.list(&set_dir)? {
                let Some(name) = file_name(&a) else { continue };
                if name.contains(".tmp-") || !a.join(REPORT).is_file() {
                    continue;
                }
                out.push(FinishedAttempt {
                    path: a,
                    pset: pset.clone(),
                    attempt: name,
                });
            }
        }
        out.sort_by(|x, y| (&x.pset, &x.attempt).cmp(&(&y.pset, &y.attempt)));
        Ok(out)
    }

    /// The attempts a commit installs: for each distinct partition set the finished
    /// attempt with the smallest id. The chosen sets must be disjoint and cover
    /// `0..partitions`; otherwise the error names the missing or overlapping
    /// partitions and nothing may be installed.
    pub fn choose(&self, partitions: usize) -> Result<Vec<FinishedAttempt>> {
        self.choose_where(partitions, |_| Ok(true))
    }

    /// [`Job::choose`] among the finished attempts `usable` accepts (an attempt
    /// that read what the commit reads): a refused attempt is passed over, not chosen.
    pub fn choose_where(
        &self,
        partitions: usize,
        usable: impl Fn(&FinishedAttempt) -> Result<bool>,
    ) -> Result<Vec<FinishedAttempt>> {
        let mut by_set: BTreeMap<PartitionSet, FinishedAttempt> = BTreeMap::new();
        for a in self.finished()? {
            if by_set.contains_key(&a.pset) || !usable(&a)? {
                continue;
            }
            by_set.insert(a.pset.clone(), a);
        }
        let mut owner: Vec<Option<&PartitionSet>> = vec![None; partitions];
        let mut beyond = Vec::new();
        for set in by_set.keys() {
            for i in set.iter() {
                match owner.get_mut(i) {
                    Some(slot @ None) => *slot = Some(set),
                    Some(Some(other)) => {
                        return Err(self.refuse(format!(
                            "finished attempts overlap: partition {i} is in both \
                             --partitions {other} and --partitions {set}; run every task \
                             of a job with the same partition sets"
                        )));
                    }
                    None => beyond.push(i),
                }
            }
        }
        if let Some(i) = beyond.first() {
            return Err(self.refuse(format!(
                "an attempt worked on partition {i} but the dataset has {partitions} \
                 partitions; the job does not belong to this crawl state"
            )));
        }
        let missing: Vec<usize> = (0..partitions).filter(|&i| owner[i].is_none()).collect();
        if !missing.is_empty() {
            let set = PartitionSet::from_ranges(missing.iter().map(|&i| (i, i)).collect());
            return Err(self.refuse(format!(
                "no finished attempt for partitions {set} ({} of {partitions}); run their \
                 tasks (--job {} --partitions {set} --attempt ID), then commit again",
                missing.len(),
                self.id
            )));
        }
        Ok(by_set.into_values().collect())
    }

    fn refuse(&self, message: String) -> Error {
        Error::crawl_dir(
            &self.dir,
            format!("cannot commit job {}: {message}", self.id),
        )
    }

    /// Removes the job's directory (after its commit installed the new version).
    pub fn remove(&self) -> Result<()> {
        LocalFs.delete(&self.dir)?;
        if let Some(parent) = self.dir.parent() {
            // `_jobs/` itself goes when it is empty; another job may still be there.
            let _ = std::fs::remove_dir(parent);
        }
        Ok(())
    }
}

/// An attempt being written: a private directory renamed into place by
/// [`AttemptWriter::finish`]; dropped unfinished, it is removed.
#[derive(Debug)]
pub struct AttemptWriter {
    tmp: PathBuf,
    dest: PathBuf,
    pset: PartitionSet,
    attempt: String,
    done: bool,
}

impl AttemptWriter {
    /// The partitions this attempt works on.
    pub fn partitions(&self) -> &PartitionSet {
        &self.pset
    }

    /// The attempt id.
    pub fn attempt(&self) -> &str {
        &self.attempt
    }

    /// The private directory to write into.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The directory of dataset `name` inside the attempt (created).
    pub fn dataset(&self, name: &str) -> Result<PathBuf> {
        let p = self.tmp.join(name);
        LocalFs.create_dir(&p)?;
        Ok(p)
    }

    /// Finishes the attempt: seals every dataset directory written (its manifest),
    /// writes `report`, renames the attempt into place. Returns `false` when the same
    /// attempt id had already finished (this run's output is dropped).
    pub fn finish<T: Serialize>(self, report: &T) -> Result<bool> {
        self.finish_checked(report, true)
    }

    /// [`AttemptWriter::finish`] even when a SIGINT/SIGTERM arrived: for a stage whose
    /// output after a signal is what it did so far (a one-process fetch writes what it
    /// fetched; the rest stays due).
    pub fn finish_anyway<T: Serialize>(self, report: &T) -> Result<bool> {
        self.finish_checked(report, false)
    }

    fn finish_checked<T: Serialize>(mut self, report: &T, signals: bool) -> Result<bool> {
        for d in LocalFs.list(&self.tmp)? {
            if d.is_dir() {
                integrity::seal(&d)?;
            }
        }
        let mut bytes = serde_json::to_vec_pretty(report).map_err(|e| {
            Error::crawl_dir(&self.tmp, format!("cannot encode the task report: {e}"))
        })?;
        bytes.push(b'\n');
        parquet::write_atomic(&self.tmp.join(REPORT), &bytes)?;
        if signals {
            crate::signal::check(&format!(
                "task on partitions {} stopped before finishing attempt {}: nothing is \
                 recorded; rerun the task",
                self.pset, self.attempt
            ))?;
        }
        if LocalFs.exists(&self.dest)? {
            tracing::warn!(
                "attempt {} of partitions {} had already finished: keeping it, dropping \
                 this run's output",
                self.attempt,
                self.pset
            );
            LocalFs.delete(&self.tmp)?;
            self.done = true;
            return Ok(false);
        }
        LocalFs.rename(&self.tmp, &self.dest)?;
        self.done = true;
        Ok(true)
    }
}

impl Drop for AttemptWriter {
    fn drop(&mut self) {
        if !self.done {
            let _ = LocalFs.delete(&self.tmp);
        }
    }
}

/// A finished attempt chosen (or choosable) by a commit.
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    path: PathBuf,
    pset: PartitionSet,
    attempt: String,
}

impl FinishedAttempt {
    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The partitions it covers.
    pub fn partitions(&self) -> &PartitionSet {
        &self.pset
    }

    /// Its attempt id.
    pub fn attempt(&self) -> &str {
        &self.attempt
    }

    /// The directory of dataset `name` it wrote (may not exist when it wrote none).
    pub fn dataset(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The part files of dataset `name` it wrote, in name order (checked against the
    /// attempt's manifest); empty when it wrote none.
    pub fn parts(&self, name: &str) -> Result<Vec<PathBuf>> {
        let d = self.dataset(name);
        if !d.is_dir() {
            return Ok(Vec::new());
        }
        parquet::part_files(&d)
    }

    /// Links the parts of dataset `name` it wrote into the directory `to` (a staged
    /// dataset) under their own names ([`link_part`]).
    pub fn link_parts(&self, name: &str, to: &Path) -> Result<()> {
        for p in self.parts(name)? {
            let file = p.file_name().map(|n| n.to_os_string()).unwrap_or_default();
            link_part(&p, &to.join(file))?;
        }
        Ok(())
    }

    /// Its report.
    pub fn report<T: DeserializeOwned>(&self) -> Result<T> {
        parquet::read_json(&self.path.join(REPORT))
    }
}

/// Links the part file `from` into a staged dataset as `to` (a hard link; a copy
/// where links are not possible): a commit never rewrites data.
pub fn link_part(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    let tmp = to.with_extension(format!("tmp-{}", nonce()));
    std::fs::copy(from, &tmp).at(&tmp)?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .at(&tmp)?;
    std::fs::rename(&tmp, to).at(to)?;
    Ok(())
}

/// Whether [`link_tree`] links `_SUCCESS` markers too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markers {
    /// Link them (an exact copy of a sealed dataset: repartition's unchanged parts).
    Keep,
    /// Leave them out (the tree goes into a staged dataset that is sealed anew).
    Skip,
}

/// Links the file `from`, or every file under the directory `from`, to `to` (parent
/// directories created), keeping the tree: hard links, copies where links fail (see
/// [`link_part`]); data is never rewritten.
pub fn link_tree(from: &Path, to: &Path, markers: Markers) -> Result<()> {
    if !from.is_dir() {
        return link_part(from, to);
    }
    LocalFs.create_dir(to)?;
    for p in LocalFs.list(from)? {
        let Some(name) = p.file_name() else { continue };
        if markers == Markers::Skip && name == names::SUCCESS && !p.is_dir() {
            continue;
        }
        link_tree(&p, &to.join(name), markers)?;
    }
    Ok(())
}

/// The name under which a shuffle output for target partition `j`, written by the
/// attempt on `pset`, is committed: `part-0000j.parquet` when one attempt covered
/// every partition of `n`, else `part-0000j-<pset>.parquet`
/// ([`parquet::partition_files`] finds both).
pub fn shuffle_part_name(j: usize, pset: &PartitionSet, n: usize) -> String {
    if pset.is_all(n) {
        parquet::part_name(j)
    } else {
        format!("part-{j:05}-{}.parquet", pset.dir_name())
    }
}

/// A name unique to this process and moment (`<host>-<pid>-<nanos>`), so that
/// attempts on different machines sharing a file system never collide.
pub fn nonce() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(32)
        .collect::<String>();
    format!("{host}{}x{:x}", std::process::id(), nanos)
}

/// Removes the private jobs of one-process runs of `stage` whose process is gone
/// (`<stage>-local-<pid>-...` left by a kill); call it holding the stage's lock.
pub fn remove_stale_local(root: &Path, stage: &str) -> Result<()> {
    let prefix = format!("{stage}-local-");
    for dir in LocalFs.list(&root.join(names::JOBS))? {
        let Some(name) = file_name(&dir) else {
            continue;
        };
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            tracing::info!("removing a job a killed {stage} left: {}", dir.display());
            LocalFs.delete(&dir)?;
        }
    }
    Ok(())
}

fn file_name(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_sets_parse_merge_and_name() {
        let s = PartitionSet::parse("7-9, 0,2,3").unwrap();
        assert_eq!(s.to_string(), "0,2-3,7-9");
        assert_eq!(s.dir_name(), "p00000_00002-00003_00007-00009");
        assert_eq!(PartitionSet::from_dir_name(&s.dir_name()), Some(s.clone()));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 2, 3, 7, 8, 9]);
        assert_eq!(s.len(), 6);
        assert!(s.contains(8) && !s.contains(5));
        assert!(PartitionSet::parse("3-1").is_err());
        assert!(
            PartitionSet::parse("a")
                .unwrap_err()
                .contains("`a` is not a number")
        );
        assert!(PartitionSet::parse("0-3").unwrap().is_all(4));
        assert!(PartitionSet::parse("all").unwrap().resolve(4).is_all(4));
        assert_eq!(
            PartitionSet::parse("2").unwrap().resolve(4).to_string(),
            "2"
        );
        assert!(s.check_within(10, "crawldb").is_ok());
        assert!(s.check_within(9, "crawldb").is_err());
    }

    #[test]
    fn ids_are_checked() {
        assert!(check_job_id("r2-updatedb-5f3a").is_ok());
        assert!(check_attempt_id("3-17-0").is_ok());
        assert!(check_attempt_id("../x").is_err());
        assert!(check_attempt_id("").is_err());
        assert!(check_job_id("a b").is_err());
    }

    fn finish(job: &Job, spec: &str, attempt: &str, rows: u64) -> bool {
        let w = job
            .attempt_writer(&PartitionSet::parse(spec).unwrap(), attempt)
            .unwrap();
        w.dataset("crawldb").unwrap();
        w.finish(&serde_json::json!({ "rows": rows })).unwrap()
    }

    #[test]
    fn choose_takes_one_attempt_per_set_and_needs_a_disjoint_cover() {
        let t = tempfile::tempdir().unwrap();
        let job = Job::open(t.path(), "j1").unwrap();
        assert!(finish(&job, "0-1", "b", 1));
        assert!(finish(&job, "0-1", "a", 2));
        // The same attempt id again: dropped.
        assert!(!finish(&job, "0-1", "a", 3));
        let err = job.choose(4).unwrap_err().to_string();
        assert!(
            err.contains("no finished attempt for partitions 2-3"),
            "{err}"
        );
        // An unfinished attempt does not count.
        let w = job
            .attempt_writer(&PartitionSet::parse("2-3").unwrap(), "z")
            .unwrap();
        drop(w);
        assert!(job.choose(4).is_err());
        assert!(finish(&job, "2-3", "c", 4));
        let chosen = job.choose(4).unwrap();
        assert_eq!(chosen.len(), 2);
        assert_eq!(chosen[0].attempt(), "a");
        let r: serde_json::Value = chosen[0].report().unwrap();
        assert_eq!(r["rows"], 2);
        // Overlapping sets are refused.
        assert!(finish(&job, "3", "d", 5));
        let err = job.choose(4).unwrap_err().to_string();
        assert!(err.contains("overlap"), "{err}");
        job.remove().unwrap();
        assert!(!job.dir().exists());
    }

    #[test]
    fn shuffle_names() {
        let all = PartitionSet::all(4);
        assert_eq!(shuffle_part_name(2, &all, 4), "part-00002.parquet");
        let some = PartitionSet::parse("1-2").unwrap();
        assert_eq!(
            shuffle_part_name(2, &some, 4),
            "part-00002-p00001-00002.parquet"
        );
        assert!(integrity::is_part_name(&shuffle_part_name(2, &some, 4)));
    }
}
