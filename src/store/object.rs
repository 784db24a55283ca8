//! The crawl directory on an object store (`s3://`, `gs://`, `az://`, `file://`)
//! through the `object_store` crate: the URI, the manifest protocol, the local
//! working mirror stages run on, and garbage collection (docs/object-store.md).
//!
//! ```text
//! <prefix>/objects/<b3[0..2]>/<b3>          immutable file contents, keyed by blake3
//! <prefix>/<unit>/_versions/<n:020>.json    version n of a unit (a manifest, created once)
//! <prefix>/<unit>/_versions/_latest         a hint: the newest n (overwritten)
//! ```
//!
//! A *unit* is what one manifest describes: `crawldb`, `linkdb`, `sitemapdb` (the
//! files of their `current/`), `pagerank` (the whole `pagerank/` tree), `_state`
//! (`robots_cache.json`, `fetch.last_end`), `segments` (the catalog: the names of
//! the live segments) and `segments/<name>` (one segment's whole tree). A commit
//! creates version n+1 of a unit with `PutMode::Create` (`If-None-Match: *`): of two
//! writers that read version n, exactly one creates n+1; the other fails
//! ([`Error::Locked`]: another writer committed first, rerun). `current` is the
//! newest version, `old` the one before. Readers never list: they read `_latest`
//! and HEAD n+1, n+2, ... until one is absent.
//!
//! Stages keep running on a local directory: [`Mirror::open`] pulls every unit's
//! current version into a working mirror (only the files whose blake3 differs from
//! what the mirror holds), the stage runs on it, and [`Mirror::push`] uploads the
//! new files and commits a version of every unit that changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use super::delta::{self, DataFile, TableLog};
use super::integrity;
use super::jobs::{PartitionSet, REPORT};
use super::layout::CrawlDir;
use super::lock::Lock;
use super::names::{self, VersionedDb};
use super::parquet::SUCCESS_MARKER;
use super::versioned::test_pause;
use crate::error::{Error, IoContext, Result};

/// The variable naming the working-mirror directory (the `--work-dir` flag's env).
pub const WORK_DIR_ENV: &str = "TRAWL_WORK_DIR";

/// `<prefix>/objects/`: file contents keyed by blake3.
const OBJECTS: &str = "objects";
/// `<unit>/_versions/`: a unit's version manifests.
const VERSIONS: &str = "_versions";
/// `<unit>/_versions/_latest`: the newest version number (a hint).
const LATEST: &str = "_latest";
/// What a mirror pulls and pushes (docs/object-store.md, "Partition tasks").
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    /// A one-process stage: every file of every unit is pulled; changed units are
    /// committed.
    #[default]
    Whole,
    /// One partition task of `job`: the parts of other partitions are placeholders
    /// (not downloaded) unless their dataset is one the stage reads whole; the job's
    /// attempts and job-level files are materialised; the push publishes the task's
    /// finished attempt (objects, then its manifest created once) and job-level
    /// files, and commits no unit.
    Task {
        /// The job.
        job: String,
        /// The partitions the task works on.
        partitions: PartitionSet,
        /// Its `--pass`, if any: which shuffles it reads ([`MirrorNeeds::shuffles`]).
        pass: Option<String>,
    },
    /// A driver step of `job` (its commit, generate's cut-off): every part is a
    /// placeholder, attempts' parts included; the push commits the changed units
    /// (placeholders are named, not uploaded) and removes the job's objects once
    /// the stage removed the job.
    Job {
        /// The job.
        job: String,
    },
    /// A step that reads only small files (`readdb --partitions`): every part is
    /// a placeholder; nothing is pushed.
    Meta,
    /// A reader of the search index alone (`search`, `index --to jsonl`): the
    /// index is pulled, no other unit is looked at; nothing is pushed.
    Index,
}

impl Scope {
    fn job(&self) -> Option<&str> {
        match self {
            Scope::Whole | Scope::Meta | Scope::Index => None,
            Scope::Task { job, .. } | Scope::Job { job } => Some(job),
        }
    }

    /// Whether the mirror's pull leaves placeholders for parts (the next open
    /// starts afresh).
    fn placeholders(&self) -> bool {
        matches!(self, Scope::Task { .. } | Scope::Job { .. } | Scope::Meta)
    }
}

/// What a stage needs of a working mirror beyond its scope's parts, declared by the
/// stage in the registry (`cli::Command::mirror`) and handed to [`Mirror::open_scoped`]:
/// the storage layer never tells stages apart by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MirrorNeeds {
    /// Datasets a task reads whole, whatever its partitions.
    pub reads_whole: &'static [WholeRead],
    /// Its runs carry each partition's fetch state between runs
    /// (`fetch_state/<n>/p<i>/`: `fetch.last_end`, the robots cache): fetch.
    pub fetch_state: bool,
    /// The shuffle passes of its jobs ([`crate::store::jobs::Job::shuffle`]) a task
    /// of each pass reads: `(pass, shuffles)`, the pass as `--pass` names it (`""`
    /// for a task without `--pass`). A task pulls the attempts of those shuffles
    /// only (its partitions' parts of every one of them), no other shuffle's.
    pub shuffles: &'static [(&'static str, &'static [&'static str])],
    /// It reads or writes the search index (`index/`: tantivy's files, the one
    /// unit that is not Parquet): index, search, crawl. Other stages' mirrors
    /// neither pull nor push it.
    pub index: bool,
}

/// A dataset a task reads whole (see [`MirrorNeeds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WholeRead {
    /// Always (a sitemap task reads the `Sitemap:` lines of every segment's
    /// `robots` records and keeps those of its hosts).
    Always(names::SegmentDataset),
    /// A versioned dataset's current version (a hostdb task counts the sitemaps of
    /// its hosts from the whole sitemapdb).
    Db(names::VersionedDb),
    /// Unless the segment brings its redirects in `crawl_parse` (its `_meta.json`
    /// has `redirects_in_crawl_parse`): updatedb routes the redirects of an older
    /// segment's `crawl_fetch` to their target partitions itself
    /// (docs/tasks-segments.md).
    UnlessRouted(names::SegmentDataset),
}

impl MirrorNeeds {
    /// Nothing beyond the scope's parts.
    pub const NONE: MirrorNeeds = MirrorNeeds {
        reads_whole: &[],
        fetch_state: false,
        shuffles: &[],
        index: false,
    };

    /// Whether a task of pass `pass` (`None`: without `--pass`) reads the shuffle
    /// `name`. A pass of an iteration is named `pass@K` (pagerank's `iterate@3`);
    /// the shuffles it reads may name the iteration: `rank.{k}` is `rank.3`,
    /// `rank.{k-1}` is `rank.2` (none in iteration 0).
    fn reads_shuffle(&self, pass: Option<&str>, name: &str) -> bool {
        let pass = pass.unwrap_or("");
        let (base, k) = match pass.split_once('@') {
            Some((base, k)) => (base, k.parse::<usize>().ok()),
            None => (pass, None),
        };
        let named = |pattern: &str| -> bool {
            if let Some(stem) = pattern.strip_suffix("{k}") {
                k.is_some_and(|k| name.strip_prefix(stem) == Some(&k.to_string()))
            } else if let Some(stem) = pattern.strip_suffix("{k-1}") {
                k.and_then(|k| k.checked_sub(1))
                    .is_some_and(|k| name.strip_prefix(stem) == Some(&k.to_string()))
            } else {
                pattern == name
            }
        };
        self.shuffles
            .iter()
            .any(|(p, reads)| *p == base && reads.iter().any(|r| named(r)))
    }

    /// Whether a driver step of a job (its commit) reads the whole of `dataset`: the
    /// versioned datasets the stage reads whole ([`WholeRead::Db`]).
    fn job_reads_whole(&self, dataset: &str) -> bool {
        self.reads_whole
            .iter()
            .any(|w| matches!(w, WholeRead::Db(d) if d.as_str() == dataset))
    }

    /// Whether a task reads the whole of `dataset` of a segment (`segment_routed`:
    /// the segment brings its redirects in `crawl_parse`).
    fn task_reads_whole(&self, dataset: &str, segment_routed: bool) -> bool {
        self.reads_whole.iter().any(|w| match w {
            WholeRead::Always(d) => d.as_str() == dataset,
            WholeRead::Db(d) => d.as_str() == dataset,
            WholeRead::UnlessRouted(d) => d.as_str() == dataset && !segment_routed,
        })
    }
}

/// The partition index of a part file's name (`part-00003.parquet`,
/// `part-00003-p00000-00001.parquet`: 3).
fn part_index(file: &str) -> Option<usize> {
    // A dataset's Parquet part, or a partition's candidates in a generate job
    // (`part-NNNNN.cands`, read by ranges at the cut-off: crawldb::cutoff).
    let cands = file.starts_with("part-") && file.ends_with(".cands");
    if !(integrity::is_part_name(file) || cands) {
        return None;
    }
    let digits: String = file
        .strip_prefix("part-")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The partition a file belongs to: a Parquet part's (`part-00003...`), or an index
/// shard's file's (`shard-00003/...` in the index, `shards/shard-00003/...` in an
/// attempt); `None` for the others.
fn file_partition(name: &str) -> Option<usize> {
    name.rsplit('/')
        .next()
        .and_then(part_index)
        .or_else(|| name.split('/').find_map(shard_index))
}

/// The partition of an index shard's directory name (`shard-00003`: 3).
fn shard_index(dir: &str) -> Option<usize> {
    let digits = dir.strip_prefix("shard-")?;
    if digits.len() != 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A finished attempt on the object store
/// (`_jobs/<job>/attempts/<dir>.json`, created once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptManifest {
    /// `trawl-object-attempt/1`.
    pub format: String,
    /// The job.
    pub job: String,
    /// The attempt's directory inside the job (`[pass.<p>/]<pset>/<attempt>`).
    pub dir: String,
    /// The stage that wrote it.
    pub written_by: String,
    /// When (ms UTC).
    pub written_time: i64,
    /// Its files, by path inside the attempt directory.
    pub files: Vec<FileEntry>,
}

/// The unit of loose crawl-directory files (`robots_cache.json`, `fetch.last_end`).
const STATE_UNIT: &str = "_state";
/// The format of version manifests.
const FORMAT: &str = "trawl-object-version/1";
/// The format of attempt manifests.
const ATTEMPT_FORMAT: &str = "trawl-object-attempt/1";
/// `_jobs/<job>/attempts/<pset>/<attempt>.json`: a finished attempt's manifest.
const ATTEMPTS: &str = "attempts";
/// `_jobs/<job>/files/<name>`: a job-level file (generate's cut-off, ...).
const JOB_FILES: &str = "files";

/// Uploads and downloads in flight at once.
const CONCURRENCY: usize = 8;
/// Test pause point: after the first object of a push is uploaded.
pub const PAUSE_UPLOADED_ONE: &str = "object:uploaded-one";
/// Test pause point: everything uploaded, before the first version is created.
pub const PAUSE_BEFORE_COMMIT: &str = "object:before-commit";

/// A `--crawl-dir` value: a local directory or an object-store URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrawlUri {
    /// A local (or NFS) directory: the stages work on it directly, as always.
    Local(PathBuf),
    /// An object-store location (`s3://bucket/prefix`, `gs://..`, `az://..`,
    /// `file:///path`).
    Object(ObjectUri),
}

/// An object-store crawl directory: its URI without a trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUri {
    uri: String,
    scheme: String,
}

impl CrawlUri {
    /// Parses a `--crawl-dir` value: `s3://`, `s3a://`, `gs://`, `az://`, `abfs://`,
    /// `abfss://` and `file://` URIs are object-store locations; anything else is a
    /// local path, used exactly as before.
    pub fn parse(dir: &Path) -> Result<CrawlUri> {
        let text = dir.to_string_lossy();
        let Some((scheme, rest)) = text.split_once("://") else {
            return Ok(CrawlUri::Local(dir.to_path_buf()));
        };
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(
            scheme.as_str(),
            "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "file"
        ) {
            return Ok(CrawlUri::Local(dir.to_path_buf()));
        }
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() || (scheme != "file" && rest.starts_with('/')) {
            return Err(Error::input(
                text.as_ref(),
                format!("an object-store crawl directory needs a bucket: {scheme}://BUCKET/PREFIX"),
            ));
        }
        Ok(CrawlUri::Object(ObjectUri {
            uri: format!("{scheme}://{rest}"),
            scheme,
        }))
    }
}

impl ObjectUri {
    /// The URI as given (no trailing `/`).
    pub fn as_str(&self) -> &str {
        &self.uri
    }

    /// The store and the key prefix of the crawl directory in it. S3, GCS and Azure
    /// read their endpoint and credentials from the standard environment
    /// (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`; `GOOGLE_*`; `AZURE_*`).
    fn open(&self) -> Result<(Arc<dyn ObjectStore>, Key)> {
        let bad = |e: object_store::Error| self.error(format!("cannot open the object store: {e}"));
        if self.scheme == "file" {
            let dir = PathBuf::from(self.uri.trim_start_matches("file://"));
            fs::create_dir_all(&dir).at(&dir)?;
            let store = object_store::local::LocalFileSystem::new_with_prefix(&dir).map_err(bad)?;
            return Ok((Arc::new(store), Key::default()));
        }
        let url = url::Url::parse(&self.uri)
            .map_err(|e| Error::input(&self.uri, format!("not a valid URI: {e}")))?;
        let prefix = Key::parse(url.path()).map_err(|e| self.error(format!("bad prefix: {e}")))?;
        crate::tls::install_provider();
        let store: Arc<dyn ObjectStore> = match self.scheme.as_str() {
            "s3" | "s3a" => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(&self.uri)
                    .build()
                    .map_err(bad)?,
            ),
            "gs" => Arc::new(
                object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(&self.uri)
                    .build()
                    .map_err(bad)?,
            ),
            _ => Arc::new(
                object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(&self.uri)
                    .build()
                    .map_err(bad)?,
            ),
        };
        Ok((store, prefix))
    }

    /// An error about this crawl directory.
    fn error(&self, message: impl Into<String>) -> Error {
        Error::crawl_dir(&self.uri, message)
    }
}

/// One version of a unit, stored as `<unit>/_versions/<n:020>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionManifest {
    /// `trawl-object-version/1`.
    pub format: String,
    /// The unit (`crawldb`, `segments/<name>`, ...).
    pub unit: String,
    /// This version's number (1, 2, ...).
    pub version: u64,
    /// A random id of the commit (tells a retried create of our own from another's).
    pub commit: String,
    /// The stage that committed it.
    pub written_by: String,
    /// When (ms UTC).
    pub written_time: i64,
    /// The unit was deleted (a segment removed by mergesegs or prunesegs).
    #[serde(default)]
    pub deleted: bool,
    /// Every file of the unit, by its path inside the unit's directory.
    pub files: Vec<FileEntry>,
    /// The catalog only: the live segments' names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<String>,
    /// The unit's tables (by directory inside the unit, `""` for its own files):
    /// the Delta log version this unit version is, the table's id and schema
    /// ([`delta`]). Empty in a unit without Parquet parts and in the layout before
    /// open tables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, delta::TableLog>,
}

/// One file of a unit's version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path inside the unit's directory (`part-00003.parquet`, `hits/part-00000.parquet`).
    pub name: String,
    /// The object holding its content (`objects/<b3[0..2]>/<b3>` under the prefix).
    pub key: String,
    /// Bytes.
    pub size: u64,
    /// blake3 of the content (hex).
    pub blake3: String,
    /// Rows, for Parquet parts listed in their dataset's `_SUCCESS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

/// A unit of the crawl directory (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    /// `segments/<name>`: one segment's tree.
    Segment(String),
    /// `segments`: the catalog of live segments.
    Catalog,
    /// `_state`: loose files at the root.
    State,
    /// `pagerank`: the whole `pagerank/` tree.
    PageRank,
    /// `index`: the search index's installed version (`index/current/`: its
    /// `_meta.json` and each shard's tantivy files, `meta.json` and `.managed.json`;
    /// pulled and pushed only for [`MirrorNeeds::index`]).
    Index,
    /// A versioned dataset: the files of its `current/`.
    Db(DbUnit),
}

/// The versioned datasets, in commit order (the crawldb last: it records what the
/// others hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum DbUnit {
    Sitemap,
    Link,
    Host,
    Crawl,
}

impl DbUnit {
    fn db(self) -> VersionedDb {
        match self {
            DbUnit::Sitemap => VersionedDb::SitemapDb,
            DbUnit::Link => VersionedDb::LinkDb,
            DbUnit::Host => VersionedDb::HostDb,
            DbUnit::Crawl => VersionedDb::CrawlDb,
        }
    }
}

/// The units that always exist (possibly without a version yet), in commit order.
const FIXED: [Unit; 8] = [
    Unit::Catalog,
    Unit::State,
    Unit::PageRank,
    Unit::Index,
    Unit::Db(DbUnit::Sitemap),
    Unit::Db(DbUnit::Link),
    Unit::Db(DbUnit::Host),
    Unit::Db(DbUnit::Crawl),
];

impl Unit {
    /// The unit's name (its key under the prefix).
    fn name(&self) -> String {
        match self {
            Unit::Segment(s) => format!("{}/{s}", names::SEGMENTS),
            Unit::Catalog => names::SEGMENTS.to_string(),
            Unit::State => STATE_UNIT.to_string(),
            Unit::PageRank => names::PAGERANK.to_string(),
            Unit::Index => names::INDEX.to_string(),
            Unit::Db(d) => d.db().as_str().to_string(),
        }
    }

    /// The local directory holding its files, and whether subdirectories count.
    fn local(&self, root: &Path) -> Option<(PathBuf, bool)> {
        match self {
            Unit::Segment(s) => Some((root.join(names::SEGMENTS).join(s), true)),
            Unit::Catalog => None,
            Unit::State => Some((root.to_path_buf(), false)),
            Unit::PageRank => Some((root.join(names::PAGERANK), true)),
            // The installed version's shards (`index/current/`): `old/` and staged
            // versions stay local, as for the versioned datasets.
            Unit::Index => Some((root.join(names::INDEX).join(names::CURRENT), true)),
            Unit::Db(d) => Some((root.join(d.db().as_str()).join(names::CURRENT), false)),
        }
    }

    /// The directory removed when the unit has no version (for a versioned dataset,
    /// `old/` too, so that a local recovery cannot bring it back).
    fn local_base(&self, root: &Path) -> Option<PathBuf> {
        match self {
            Unit::Db(d) => Some(root.join(d.db().as_str())),
            Unit::State | Unit::Catalog => None,
            Unit::Index => Some(root.join(names::INDEX)),
            _ => self.local(root).map(|(d, _)| d),
        }
    }
}

impl Unit {
    /// The unit of a name ([`Unit::name`]); `None` for what is no unit.
    fn from_name(name: &str) -> Option<Unit> {
        if let Some(s) = name.strip_prefix(&format!("{}/", names::SEGMENTS)) {
            return is_segment_name(s).then(|| Unit::Segment(s.to_string()));
        }
        FIXED.iter().find(|u| u.name() == name).cloned()
    }

    /// Whether the unit's Parquet parts are Delta tables ([`delta`]): the versioned
    /// datasets, `pagerank/` and the segments' datasets.
    fn has_tables(&self) -> bool {
        matches!(self, Unit::Db(_) | Unit::PageRank | Unit::Segment(_))
    }
}

/// The key (under the prefix) of the table `dir` of the unit `unit`.
fn table_root(unit: &str, dir: &str) -> String {
    if dir.is_empty() {
        unit.to_string()
    } else {
        format!("{unit}/{dir}")
    }
}

/// A unit version a push commits: the manifest, the local files' stats, and the
/// version it replaces.
struct Commit {
    unit: Unit,
    manifest: VersionManifest,
    stats: BTreeMap<String, Stat>,
    base: Option<VersionManifest>,
}

/// A unit version's tables and their logs ([`VersionManifest::tables`]).
type Tables = BTreeMap<String, TableLog>;

/// How a table's data file gets to its key: uploaded from the mirror, or copied on
/// the store from the object it had (an attempt's, or the layout before tables).
#[derive(Debug, Clone)]
enum Fill {
    Upload(PathBuf),
    Copy(String),
}

/// The table files of `m`, by table directory, as the log lists them (paths inside
/// the table); files whose key is not in their table (the layout before tables)
/// are left out.
fn table_files(m: &VersionManifest) -> BTreeMap<String, Vec<DataFile>> {
    let mut out: BTreeMap<String, Vec<DataFile>> = BTreeMap::new();
    for f in &m.files {
        let Some((dir, file)) = delta::table_file(&f.name) else {
            continue;
        };
        let root = table_root(&m.unit, dir);
        let Some(path) = f.key.strip_prefix(&format!("{root}/")) else {
            continue;
        };
        out.entry(dir.to_string()).or_default().push(DataFile {
            path: path.to_string(),
            size: f.size,
            blake3: f.blake3.clone(),
            rows: f.rows,
            part: part_index(file),
        });
    }
    out
}

/// Gives every table file of `files` (the new version of `unit`, `base` the
/// version it replaces) its key in its table, says how each new key is filled
/// (`local`: the unit's local directory, whose real files are uploaded; without
/// it, or for a placeholder, the object is copied from its old key), and returns
/// the tables' logs: unchanged tables keep theirs, a changed or new one takes the
/// next version and the schema `schema_of` reads from one of its files.
fn plan_tables(
    unit: &Unit,
    base: Option<&VersionManifest>,
    files: &mut [FileEntry],
    local: Option<&Path>,
    schema_of: &mut dyn FnMut(&FileEntry) -> Result<arrow::datatypes::Schema>,
    seed: &str,
) -> Result<(Tables, Vec<(String, Fill)>)> {
    let mut fills = Vec::new();
    if !unit.has_tables() {
        return Ok((BTreeMap::new(), fills));
    }
    let name = unit.name();
    let mut before: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut base_keys: BTreeSet<&str> = BTreeSet::new();
    for f in base.iter().flat_map(|m| m.files.iter()) {
        base_keys.insert(f.key.as_str());
        if let Some((dir, _)) = delta::table_file(&f.name) {
            before
                .entry(dir.to_string())
                .or_default()
                .insert((f.name.clone(), f.blake3.clone()));
        }
    }
    let mut after: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut first: BTreeMap<String, FileEntry> = BTreeMap::new();
    for f in files.iter_mut() {
        let Some((dir, file)) = delta::table_file(&f.name) else {
            continue;
        };
        after
            .entry(dir.to_string())
            .or_default()
            .insert((f.name.clone(), f.blake3.clone()));
        first.entry(dir.to_string()).or_insert_with(|| f.clone());
        let key = format!(
            "{}/{}",
            table_root(&name, dir),
            delta::data_name(file, &f.blake3)
        );
        if f.key == key {
            continue;
        }
        if !base_keys.contains(key.as_str()) {
            let path = local.map(|d| d.join(&f.name));
            let fill = match path {
                Some(p) if integrity::placeholder(&p).is_none() && p.is_file() => Fill::Upload(p),
                _ => Fill::Copy(f.key.clone()),
            };
            fills.push((key.clone(), fill));
        }
        f.key = key;
    }
    let logs = base.map(|m| &m.tables);
    let mut tables = BTreeMap::new();
    let dirs: BTreeSet<String> = after
        .keys()
        .chain(logs.into_iter().flat_map(|t| t.keys()))
        .cloned()
        .collect();
    for dir in dirs {
        let was = logs.and_then(|t| t.get(&dir));
        let now = after.get(&dir);
        let same = before.get(&dir) == now;
        let log = match (was, now) {
            (Some(w), _) if same => w.clone(),
            (None, None) => continue,
            _ => {
                let schema = match first.get(&dir) {
                    Some(f) => match delta::schema_string(&schema_of(f)?) {
                        Ok(s) => s,
                        Err(e) => {
                            // trawl's datasets have none (a test checks each): a
                            // foreign file. The table keeps the log it had.
                            tracing::warn!(
                                "{} has a column Delta cannot type ({e}): its Delta log is not continued",
                                table_root(&name, &dir)
                            );
                            if let Some(w) = was {
                                tables.insert(dir, w.clone());
                            }
                            continue;
                        }
                    },
                    None => was.map(|w| w.schema.clone()).unwrap_or_default(),
                };
                TableLog {
                    version: was.map_or(0, |w| w.version + 1),
                    id: was.map_or_else(
                        || delta::table_id(&format!("{seed}/{}", table_root(&name, &dir))),
                        |w| w.id.clone(),
                    ),
                    schema,
                }
            }
        };
        tables.insert(dir, log);
    }
    Ok((tables, fills))
}

/// The Arrow schema of a Parquet file of the mirror (a placeholder's read from its
/// object by ranged GETs).
fn local_schema(path: &Path) -> Result<arrow::datatypes::Schema> {
    let file = super::parquet::open_part(path)?;
    let builder = ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::parquet(path, e))?;
    Ok(builder.schema().as_ref().clone())
}

/// Whether a segment directory name is a segment's (14 digits).
fn is_segment_name(name: &str) -> bool {
    name.len() == 14 && name.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a local file or directory is work in progress or private to this machine
/// (never pushed): hidden files, locks, staged and stale leftovers, job directories.
fn is_private(name: &str) -> bool {
    // tantivy's list of the files it manages (the index unit's): without it, a
    // pulled index would never delete the segment files its merges replaced.
    if name == TANTIVY_MANAGED {
        return false;
    }
    name.starts_with('.')
        || name.starts_with("_jobs")
        || name.contains(".tmp-")
        || name.contains(".new-")
        || name.contains(".stale-")
        || name.ends_with(".lock")
}

/// tantivy's record of the files it created in an index directory.
const TANTIVY_MANAGED: &str = ".managed.json";

/// `objects/<b3[0..2]>/<b3>`.
fn object_key(blake3: &str) -> String {
    format!("{OBJECTS}/{}/{blake3}", blake3.get(..2).unwrap_or("00"))
}

/// Local state of one file when it was last pulled or pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stat {
    size: u64,
    mtime_ns: i128,
}

fn stat(path: &Path) -> Result<Stat> {
    let m = fs::metadata(path).at(path)?;
    let mtime_ns = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    Ok(Stat {
        size: m.len(),
        mtime_ns,
    })
}

/// What the mirror holds of one unit: the version it matches and its files' stats.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct UnitState {
    version: u64,
    manifest: Option<VersionManifest>,
    stats: BTreeMap<String, Stat>,
}

/// The mirror's record of what it holds (`<work>/<key>/mirror.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct MirrorState {
    uri: String,
    units: BTreeMap<String, UnitState>,
    /// The mirror holds placeholders (a task's or a job step's pull): the next
    /// open starts from an empty mirror.
    #[serde(default)]
    partial: bool,
    /// The job's keys listed at the pull (removed after the job's commit).
    #[serde(default)]
    job_keys: Vec<String>,
    /// Attempt directories (inside the job) materialised from the store.
    #[serde(default)]
    remote_attempts: BTreeSet<String>,
    /// Job-level files (inside the job) pulled, with their stats then.
    #[serde(default)]
    job_files: BTreeMap<String, Stat>,
    /// Per-partition fetch state files (`fetch_state/<n>/p<i>/...`) pulled or
    /// pushed, with their stats then.
    #[serde(default)]
    fetch_state: BTreeMap<String, Stat>,
}

/// The connection to an object-store crawl directory (blocking calls over a
/// private single-threaded tokio runtime).
pub struct Remote {
    uri: ObjectUri,
    store: Arc<dyn ObjectStore>,
    prefix: Key,
    rt: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("uri", &self.uri).finish()
    }
}

/// Requests made, for the logs and docs/object-store.md's counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Requests {
    /// GETs (manifests, hints, objects).
    pub get: u64,
    /// HEADs (probing for newer versions).
    pub head: u64,
    /// PUTs (objects, versions, hints).
    pub put: u64,
    /// LIST pages and DELETEs (gc only).
    pub other: u64,
    /// Bytes uploaded.
    pub bytes_up: u64,
    /// Bytes downloaded.
    pub bytes_down: u64,
}

impl Remote {
    /// Connects to the crawl directory at `uri` (no request is made).
    pub fn connect(uri: &ObjectUri) -> Result<Remote> {
        let (store, prefix) = uri.open()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| uri.error(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Remote {
            uri: uri.clone(),
            store,
            prefix,
            rt,
        })
    }

    /// The key of `rel` (a `/`-separated path under the crawl directory's prefix).
    fn key(&self, rel: &str) -> Key {
        rel.split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |k, p| k.join(p))
    }

    fn version_key(&self, unit: &str, n: u64) -> Key {
        self.key(&format!("{unit}/{VERSIONS}/{n:020}.json"))
    }

    fn err(&self, what: &str, key: &Key, e: object_store::Error) -> Error {
        self.uri.error(format!(
            "{what} {key} failed: {e}; check the endpoint and credentials (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...) and rerun"
        ))
    }

    /// Byte ranges `(object, offset, len)` of objects of the store, in order, by
    /// ranged GETs, up to 32 at a time (what a placeholder's reader asks:
    /// [`integrity::read_ranges`]).
    fn read_object_ranges(
        &self,
        ranges: &[(integrity::Remote, u64, usize)],
    ) -> Result<Vec<Vec<u8>>> {
        self.rt.block_on(async {
            futures::stream::iter(ranges.iter().map(|(r, offset, len)| async move {
                let key = self.key(&r.key);
                let range = *offset..*offset + *len as u64;
                let bytes = self
                    .store
                    .get_range(&key, range)
                    .await
                    .map_err(|e| self.err("GET (range)", &key, e))?;
                if bytes.len() != *len {
                    return Err(Error::Integrity {
                        path: PathBuf::from(format!("{}/{key}", self.uri.as_str())),
                        message: format!(
                            "gave {} bytes at {offset}, {len} were asked: the object is shorter than its manifest says; rerun the tasks that wrote it",
                            bytes.len()
                        ),
                    });
                }
                Ok(bytes.to_vec())
            }))
            .buffered(32)
            .try_collect::<Vec<_>>()
            .await
        })
    }

    /// Every object under `base` (one LIST, paged by the store).
    async fn list_under(&self, base: &Key) -> Result<Vec<object_store::ObjectMeta>> {
        self.store
            .list(Some(base))
            .try_collect()
            .await
            .map_err(|e| self.err("LIST", base, e))
    }

    /// The bytes at `key`, `None` when absent.
    async fn get_opt(&self, key: &Key, req: &mut Requests) -> Result<Option<Vec<u8>>> {
        req.get += 1;
        match self.store.get(key).await {
            Ok(r) => {
                let b = r.bytes().await.map_err(|e| self.err("GET", key, e))?;
                req.bytes_down += b.len() as u64;
                Ok(Some(b.to_vec()))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err("GET", key, e)),
        }
    }

    async fn exists(&self, key: &Key, req: &mut Requests) -> Result<bool> {
        req.head += 1;
        match self.store.head(key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.err("HEAD", key, e)),
        }
    }

    /// The newest version of `unit` and its manifest (`None`: no version yet):
    /// reads the `_latest` hint, then HEADs n+1, n+2, ... until one is absent.
    async fn newest(&self, unit: &str, req: &mut Requests) -> Result<Option<VersionManifest>> {
        let hint_key = self.key(&format!("{unit}/{VERSIONS}/{LATEST}"));
        let mut n = match self.get_opt(&hint_key, req).await? {
            Some(b) => String::from_utf8_lossy(&b)
                .trim()
                .parse::<u64>()
                .unwrap_or(0),
            None => 0,
        };
        while self.exists(&self.version_key(unit, n + 1), req).await? {
            n += 1;
        }
        if n == 0 {
            return Ok(None);
        }
        self.manifest(unit, n, req).await
    }

    /// Version `n` of `unit`, `None` when absent.
    async fn manifest(
        &self,
        unit: &str,
        n: u64,
        req: &mut Requests,
    ) -> Result<Option<VersionManifest>> {
        let key = self.version_key(unit, n);
        let Some(bytes) = self.get_opt(&key, req).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Integrity {
                path: PathBuf::from(format!("{}/{key}", self.uri.as_str())),
                message: format!("not a version manifest ({e}); it was altered: restore it or remove it and the versions after it"),
            })
    }

    /// Creates version `m.version` of `m.unit` unless it exists (`If-None-Match: *`),
    /// then moves the `_latest` hint. Losing the race is an [`Error::Locked`].
    async fn commit(&self, m: &VersionManifest, req: &mut Requests) -> Result<()> {
        let key = self.version_key(&m.unit, m.version);
        let body = serde_json::to_vec_pretty(m)
            .map_err(|e| self.uri.error(format!("cannot encode a manifest: {e}")))?;
        req.put += 1;
        let opts = PutOptions::from(PutMode::Create);
        match self
            .store
            .put_opts(&key, PutPayload::from(body), opts)
            .await
        {
            Ok(_) => {}
            Err(object_store::Error::AlreadyExists { .. }) => {
                // Ours, if a retried request's first try had landed.
                let theirs = self.manifest(&m.unit, m.version, req).await?;
                if theirs.as_ref().map(|t| &t.commit) != Some(&m.commit) {
                    let by = theirs.map(|t| t.written_by).unwrap_or_default();
                    return Err(Error::Locked {
                        path: PathBuf::from(format!("{}/{key}", self.uri.as_str())),
                        message: format!(
                            "another writer ({by}) committed version {} of {} first, so this {} run's result was not installed (nothing is damaged); rerun {}",
                            m.version, m.unit, m.written_by, m.written_by
                        ),
                    });
                }
            }
            Err(e) => return Err(self.err("PUT (create)", &key, e)),
        }
        req.put += 1;
        let hint = self.key(&format!("{}/{VERSIONS}/{LATEST}", m.unit));
        if let Err(e) = self
            .store
            .put(&hint, PutPayload::from(m.version.to_string().into_bytes()))
            .await
        {
            // Only a hint: readers probe past it.
            tracing::warn!("cannot update {hint}: {e}");
        }
        Ok(())
    }

    /// Writes the Delta log entries of the tables that version `next` of its unit
    /// changed (`prev`: the version before), each created once: an entry that
    /// exists already is the same one (a function of the two manifests), written by
    /// a repair.
    async fn write_logs(
        &self,
        prev: Option<&VersionManifest>,
        next: &VersionManifest,
        req: &mut Requests,
    ) -> Result<()> {
        let before = prev.map(table_files).unwrap_or_default();
        let after = table_files(next);
        let info = serde_json::json!({
            "unit": next.unit,
            "version": next.version,
            "stage": next.written_by,
        });
        for (dir, log) in &next.tables {
            let was = prev.and_then(|p| p.tables.get(dir));
            if was == Some(log) {
                continue;
            }
            let body = delta::commit_body(&delta::Change {
                before_log: was,
                log,
                before: before.get(dir).map_or(&[], Vec::as_slice),
                after: after.get(dir).map_or(&[], Vec::as_slice),
                time: next.written_time,
                info: info.clone(),
            });
            let key = self.key(&format!(
                "{}/{}",
                table_root(&next.unit, dir),
                delta::log_name(log.version)
            ));
            req.put += 1;
            match self
                .store
                .put_opts(
                    &key,
                    PutPayload::from(body.clone()),
                    PutOptions::from(PutMode::Create),
                )
                .await
            {
                Ok(_) => {}
                Err(object_store::Error::AlreadyExists { .. }) => {
                    // The same entry (a repair raced the committer), or a log that
                    // went on without this unit's manifests (a trawl from before
                    // open tables committed over them): that one cannot continue.
                    if self.get_opt(&key, req).await?.as_deref() != Some(body.as_slice()) {
                        return Err(Error::Integrity {
                            path: PathBuf::from(format!("{}/{key}", self.uri.as_str())),
                            message: format!(
                                "the Delta log of {} already has another version {}: its manifests and its log went apart (a trawl from before 2026-12-08 committed it); delete {}/{}/ and run `gc --migrate` to start its log again",
                                table_root(&next.unit, dir),
                                log.version,
                                table_root(&next.unit, dir),
                                delta::LOG_DIR
                            ),
                        });
                    }
                }
                Err(e) => return Err(self.err("PUT (create)", &key, e)),
            }
        }
        Ok(())
    }

    /// Whether every table of `m` has its log entry (one HEAD a table).
    async fn logged(&self, m: &VersionManifest, req: &mut Requests) -> Result<bool> {
        for (dir, log) in &m.tables {
            let key = self.key(&format!(
                "{}/{}",
                table_root(&m.unit, dir),
                delta::log_name(log.version)
            ));
            if !self.exists(&key, req).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Writes the log entries of `m` (a committed version) and of the versions
    /// before it that are missing: their writers died between their version and
    /// their log. Walks back from `m` (a HEAD per table of each version, a GET per
    /// version before) to the newest version whose entries are all there, then
    /// writes forward, so a table's log never skips a version. Gives up, saying so,
    /// when a version it needs is gone (`gc` keeps two). Returns how many versions
    /// were repaired.
    async fn repair_logs(&self, m: &VersionManifest, req: &mut Requests) -> Result<usize> {
        /// Versions walked back at most.
        const MAX_WALK: usize = 16;
        let mut missing: Vec<VersionManifest> = Vec::new();
        let mut cur = m.clone();
        let base = loop {
            if self.logged(&cur, req).await? {
                break Some(cur);
            }
            if cur.version <= 1 {
                missing.push(cur);
                break None;
            }
            if missing.len() >= MAX_WALK {
                return Err(self.uri.error(format!(
                    "the Delta logs of {} lack the entries of more than {MAX_WALK} versions: delete its tables' `{}/` and run `gc --migrate` to start them again",
                    m.unit,
                    delta::LOG_DIR
                )));
            }
            let Some(prev) = self.manifest(&cur.unit, cur.version - 1, req).await? else {
                return Err(self.uri.error(format!(
                    "the Delta logs of {} lack version {}'s entries and version {} is gone: delete its tables' `{}/` and run `gc --migrate` to start them again",
                    m.unit,
                    cur.version,
                    cur.version - 1,
                    delta::LOG_DIR
                )));
            };
            missing.push(cur);
            cur = prev;
        };
        let repaired = missing.len();
        let mut prev = base;
        for v in missing.into_iter().rev() {
            self.write_logs(prev.as_ref(), &v, req).await?;
            prev = Some(v);
        }
        Ok(repaired)
    }

    /// The Arrow schema of the Parquet object `rel` of `size` bytes (two ranged
    /// GETs: the tail, then the footer).
    async fn object_schema(
        &self,
        rel: &str,
        size: u64,
        req: &mut Requests,
    ) -> Result<arrow::datatypes::Schema> {
        let key = self.key(rel);
        let bad = |m: String| Error::Integrity {
            path: PathBuf::from(format!("{}/{key}", self.uri.as_str())),
            message: format!(
                "{m}: not a Parquet file; restore it or rerun the stage that wrote it"
            ),
        };
        if size < 12 {
            return Err(bad(format!("{size} bytes")));
        }
        req.get += 2;
        let tail = self
            .store
            .get_range(&key, size - 8..size)
            .await
            .map_err(|e| self.err("GET (range)", &key, e))?;
        let len = delta::footer_len(&tail).ok_or_else(|| bad("no footer".to_string()))?;
        if len + 8 > size {
            return Err(bad(format!("a footer of {len} bytes")));
        }
        let footer = self
            .store
            .get_range(&key, size - 8 - len..size - 8)
            .await
            .map_err(|e| self.err("GET (range)", &key, e))?;
        delta::footer_schema(&footer).map_err(bad)
    }

    /// Copies the object `from` to `to` on the store (no bytes through this host).
    async fn copy(&self, from: &str, to: &str, req: &mut Requests) -> Result<()> {
        let (from, to) = (self.key(from), self.key(to));
        req.put += 1;
        self.store
            .copy(&from, &to)
            .await
            .map_err(|e| self.err("COPY", &from, e))
    }

    /// Uploads the local file `path` as the object `rel` (a plain key, overwritten:
    /// job-level files, fetch state).
    async fn put_file(&self, path: &Path, rel: &str, req: &mut Requests) -> Result<()> {
        let data = fs::read(path).at(path)?;
        let key = self.key(rel);
        req.put += 1;
        req.bytes_up += data.len() as u64;
        self.store
            .put(&key, PutPayload::from(data))
            .await
            .map_err(|e| self.err("PUT", &key, e))?;
        Ok(())
    }

    /// Uploads the local file `path`, whose blake3 must be `blake3`, as the object
    /// `rel` (its [`object_key`], or a table's data file).
    async fn upload(&self, path: &Path, blake3: &str, rel: &str, req: &mut Requests) -> Result<()> {
        let key = self.key(rel);
        let data = fs::read(path).at(path)?;
        let actual = blake3::hash(&data).to_hex();
        if actual.as_str() != blake3 {
            return Err(Error::Integrity {
                path: path.to_path_buf(),
                message: format!(
                    "its blake3 is {actual}, its dataset's manifest says {blake3}: the file changed after it was written, so nothing was uploaded or committed; rerun the stage"
                ),
            });
        }
        req.put += 1;
        req.bytes_up += data.len() as u64;
        self.store
            .put(&key, PutPayload::from(data))
            .await
            .map_err(|e| self.err("PUT", &key, e))?;
        Ok(())
    }

    /// Downloads the object of `entry` into `dest` (through a temporary file),
    /// checking its size and blake3.
    async fn download(&self, entry: &FileEntry, dest: &Path, req: &mut Requests) -> Result<()> {
        let key = self.key(&entry.key);
        req.get += 1;
        let got = self
            .store
            .get(&key)
            .await
            .map_err(|e| self.err("GET", &key, e))?;
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir).at(dir)?;
        }
        let tmp = tmp_path(dest);
        let mut file = fs::File::create(&tmp).at(&tmp)?;
        let mut hasher = blake3::Hasher::new();
        let mut size = 0u64;
        let mut stream = got.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.err("GET", &key, e))?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            file.write_all(&chunk).at(&tmp)?;
        }
        file.sync_all().at(&tmp)?;
        drop(file);
        req.bytes_down += size;
        let b3 = hasher.finalize().to_hex().to_string();
        if size != entry.size || b3 != entry.blake3 {
            let _ = fs::remove_file(&tmp);
            return Err(Error::Integrity {
                path: PathBuf::from(format!("{}/{key}", self.uri.as_str())),
                message: format!(
                    "object of {} has {size} bytes and blake3 {b3}, its manifest says {} and {}: the object was altered; nothing was read",
                    entry.name, entry.size, entry.blake3
                ),
            });
        }
        fs::rename(&tmp, dest).at(dest)
    }
}

/// What a placeholder of `f` stands for.
fn remote_of(f: &FileEntry) -> integrity::Remote {
    integrity::Remote {
        bytes: f.size,
        blake3: f.blake3.clone(),
        rows: f.rows,
        key: f.key.clone(),
    }
}

/// Writes `bytes` to `dest` through a temporary file.
fn write_file(dest: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = dest.parent() {
        fs::create_dir_all(dir).at(dir)?;
    }
    let tmp = tmp_path(dest);
    fs::write(&tmp, bytes).at(&tmp)?;
    fs::rename(&tmp, dest).at(dest)
}

/// The attempt directory (`[pass.<p>/]<pset>/<attempt>`) a path inside a job
/// directory belongs to, and the path inside it; `None` for a job-level file.
fn attempt_of(rel: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = rel.split('/').collect();
    let k = parts
        .iter()
        .position(|p| PartitionSet::from_dir_name(p).is_some())?;
    if k + 2 >= parts.len() {
        return None;
    }
    Some((parts[..=k + 1].join("/"), parts[k + 2..].join("/")))
}

fn tmp_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A commit attempt's id: the blake3 of the host, pid, nanoseconds, a per-process
/// sequence number and the thread.
fn commit_id() -> String {
    // Unique per commit attempt, also for two commits of one thread within one
    // millisecond (two mirrors in one process): else the loser of a race would take
    // the winner's manifest for its own retried request.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seed = format!(
        "{}-{}-{}-{:?}",
        super::jobs::nonce(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        std::process::id(),
        std::thread::current().id()
    );
    blake3::hash(seed.as_bytes()).to_hex()[..16].to_string()
}

/// The files of a local directory (recursively when `deep`), as `/`-separated
/// paths relative to it, private names skipped.
fn walk(dir: &Path, deep: bool) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((d, rel)) = stack.pop() {
        let entries = match fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(&d, e)),
        };
        for entry in entries {
            let entry = entry.at(&d)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_private(&name) {
                continue;
            }
            let kind = entry.file_type().at(entry.path())?;
            let rel_name = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if kind.is_dir() {
                if deep {
                    stack.push((entry.path(), rel_name));
                }
            } else if kind.is_file() {
                out.push(rel_name);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The local files of a unit with their blake3: taken from the pulled manifest when
/// the file's size and mtime are unchanged, from the dataset's `_SUCCESS` manifest
/// when it lists the file with that size, else hashed.
fn scan(
    dir: &Path,
    deep: bool,
    known: &UnitState,
) -> Result<(Vec<FileEntry>, BTreeMap<String, Stat>)> {
    let mut files = Vec::new();
    let mut stats = BTreeMap::new();
    let mut sealed: BTreeMap<PathBuf, BTreeMap<String, integrity::PartEntry>> = BTreeMap::new();
    let pulled: BTreeMap<&str, &FileEntry> = known
        .manifest
        .iter()
        .flat_map(|m| m.files.iter().map(|f| (f.name.as_str(), f)))
        .collect();
    for name in walk(dir, deep)? {
        let path = dir.join(&name);
        let st = stat(&path)?;
        let parent = path.parent().unwrap_or(dir).to_path_buf();
        let file_name = name.rsplit('/').next().unwrap_or(&name).to_string();
        let entry = if let Some(f) = pulled
            .get(name.as_str())
            .filter(|_| known.stats.get(&name) == Some(&st))
        {
            (*f).clone()
        } else {
            if !sealed.contains_key(&parent) {
                let parts = if parent.join(SUCCESS_MARKER).is_file() {
                    integrity::read(&parent)
                        .ok()
                        .flatten()
                        .map(|m| m.parts.into_iter().map(|p| (p.name.clone(), p)).collect())
                        .unwrap_or_default()
                } else {
                    BTreeMap::new()
                };
                sealed.insert(parent.clone(), parts);
            }
            let listed = sealed
                .get(&parent)
                .and_then(|p| p.get(&file_name))
                .filter(|p| p.bytes == st.size);
            let (size, blake3, rows) = match listed {
                Some(p) => (p.bytes, p.blake3.clone(), Some(p.rows)),
                None => {
                    let (size, b3) = integrity::hash_file(&path)?;
                    (size, b3, None)
                }
            };
            // A placeholder's object is where it was pulled from (an attempt's, or a
            // table's data file).
            let key = integrity::placeholder(&path)
                .map(|r| r.key)
                .unwrap_or_else(|| object_key(&blake3));
            FileEntry {
                name: name.clone(),
                key,
                size,
                blake3,
                rows,
            }
        };
        files.push(entry);
        stats.insert(name, st);
    }
    Ok((files, stats))
}

/// Whether the local files of a unit are still exactly those recorded (by stat).
fn unchanged(dir: &Path, deep: bool, known: &UnitState) -> Result<bool> {
    let names = walk(dir, deep)?;
    if names.len() != known.stats.len() {
        return Ok(false);
    }
    for name in names {
        match known.stats.get(&name) {
            Some(s) if *s == stat(&dir.join(&name))? => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// The local working copy of an object-store crawl directory that a stage runs on
/// (see the module doc). Held locked for the stage's whole run.
#[derive(Debug)]
pub struct Mirror {
    remote: Arc<Remote>,
    root: PathBuf,
    state_path: PathBuf,
    state: std::sync::Mutex<MirrorState>,
    stage: String,
    needs: MirrorNeeds,
    scope: Scope,
    _lock: Lock,
}

/// What a push did.
#[derive(Debug, Clone, Default)]
pub struct PushReport {
    /// Units committed, as `name@version`.
    pub committed: Vec<String>,
    /// Objects uploaded.
    pub uploaded: u64,
    /// Requests made.
    pub requests: Requests,
}

impl Mirror {
    /// The key path of the local `dir` (under this mirror's root), `/`-separated.
    fn rel_of(&self, dir: &Path) -> Result<String> {
        let rel = dir.strip_prefix(&self.root).map_err(|_| {
            self.remote.uri.error(format!(
                "internal: {} is not in the working mirror {}",
                dir.display(),
                self.root.display()
            ))
        })?;
        Ok(rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"))
    }

    /// Publishes the local directory `dir` (under the mirror's root, in a job's
    /// namespace: fetch's checkpoints) to the store while the stage runs, outside any
    /// unit: each file under its own key, then an empty `marker` last, which says
    /// the directory is whole. Returns the PUTs made.
    pub fn put_scratch_dir(&self, dir: &Path, marker: &str) -> Result<u64> {
        let rel = self.rel_of(dir)?;
        let remote = &self.remote;
        remote.rt.block_on(async {
            let mut puts = 0;
            for name in walk(dir, true)? {
                let path = dir.join(&name);
                let data = fs::read(&path).at(&path)?;
                let key = remote.key(&format!("{rel}/{name}"));
                remote
                    .store
                    .put(&key, PutPayload::from(data))
                    .await
                    .map_err(|e| remote.err("PUT", &key, e))?;
                puts += 1;
            }
            let key = remote.key(&format!("{rel}/{marker}"));
            remote
                .store
                .put(&key, PutPayload::from(Vec::new()))
                .await
                .map_err(|e| remote.err("PUT", &key, e))?;
            Ok(puts + 1)
        })
    }

    /// Brings the directories published under the local `dir`'s keys
    /// ([`Mirror::put_scratch_dir`]) that carry `marker` into `dir` (one LIST, a GET
    /// per file; each directory written beside and renamed into place, the marker
    /// left out); directories already there, and those whose path inside `dir`
    /// `wanted` refuses (before any GET), are kept out. Returns how many arrived.
    pub fn get_scratch_dirs(
        &self,
        dir: &Path,
        marker: &str,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<usize> {
        let rel = self.rel_of(dir)?;
        let remote = &self.remote;
        remote.rt.block_on(async {
            let base = remote.key(&rel);
            let listed = remote.list_under(&base).await?;
            let strip = base.as_ref().len();
            let names: Vec<String> = listed
                .iter()
                .map(|m| {
                    m.location
                        .as_ref()
                        .get(strip..)
                        .unwrap_or_default()
                        .trim_start_matches('/')
                        .to_string()
                })
                .collect();
            // Whole directories: those holding the marker.
            let whole: BTreeSet<&str> = names
                .iter()
                .filter_map(|n| n.strip_suffix(&format!("/{marker}")))
                .collect();
            let mut arrived = 0;
            for d in &whole {
                let dest = dir.join(d);
                if dest.exists() || !wanted(d) {
                    continue;
                }
                let tmp = dir.join(format!("{d}.tmp-{}", super::jobs::nonce()));
                for n in names.iter().filter(|n| {
                    n.strip_prefix(d).is_some_and(|r| r.starts_with('/'))
                        && !n.ends_with(&format!("/{marker}"))
                }) {
                    let key = remote.key(&format!("{rel}/{n}"));
                    let bytes = remote
                        .store
                        .get(&key)
                        .await
                        .map_err(|e| remote.err("GET", &key, e))?
                        .bytes()
                        .await
                        .map_err(|e| remote.err("GET", &key, e))?;
                    let path = tmp.join(&n[d.len() + 1..]);
                    if let Some(parent) = path.parent() {
                        fs::create_dir_all(parent).at(parent)?;
                    }
                    fs::write(&path, &bytes).at(&path)?;
                }
                fs::create_dir_all(&tmp).at(&tmp)?;
                fs::rename(&tmp, &dest).at(&dest)?;
                arrived += 1;
            }
            Ok(arrived)
        })
    }

    /// Removes from the store every key under the local `dir`'s keys (what
    /// [`Mirror::put_scratch_dir`] published). Returns how many were removed.
    pub fn delete_scratch(&self, dir: &Path) -> Result<usize> {
        let rel = self.rel_of(dir)?;
        let remote = &self.remote;
        remote.rt.block_on(async {
            let base = remote.key(&rel);
            let listed = remote.list_under(&base).await?;
            for m in &listed {
                match remote.store.delete(&m.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(remote.err("DELETE", &m.location, e)),
                }
            }
            Ok(listed.len())
        })
    }

    /// The mirror directory of `uri` under `work` (default: `TRAWL_WORK_DIR`, else
    /// `<temp>/trawl-work`): `<work>/<tail>-<hash>/`.
    pub fn dir_for(uri: &ObjectUri, work: Option<&Path>) -> PathBuf {
        let work = work.map(Path::to_path_buf).unwrap_or_else(|| {
            std::env::var_os(WORK_DIR_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("trawl-work"))
        });
        let tail: String = uri
            .as_str()
            .rsplit('/')
            .next()
            .unwrap_or("crawl")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(40)
            .collect();
        let hash = &blake3::hash(uri.as_str().as_bytes()).to_hex()[..16];
        work.join(format!("{tail}-{hash}"))
    }

    /// Locks the mirror of `uri` (under `work`, see [`Mirror::dir_for`]) for `stage`
    /// (the name its lock and commits carry) and pulls every unit's current version
    /// into it. [`Mirror::root`] is then the crawl directory the stage works on.
    pub fn open(uri: &ObjectUri, work: Option<&Path>, stage: &str) -> Result<Mirror> {
        Self::open_scoped(uri, work, stage, MirrorNeeds::NONE, Scope::Whole)
    }

    /// [`Mirror::open`] for what `scope` needs: a partition task pulls only its
    /// partitions' parts, a job step (commit, cut-off) no part at all; both
    /// materialise the job's attempts and job-level files (see [`Scope`]); `needs`
    /// is what the stage reads or carries beyond that.
    pub fn open_scoped(
        uri: &ObjectUri,
        work: Option<&Path>,
        stage: &str,
        needs: MirrorNeeds,
        scope: Scope,
    ) -> Result<Mirror> {
        let dir = Mirror::dir_for(uri, work);
        fs::create_dir_all(&dir).at(&dir)?;
        let lock = Lock::acquire(&dir.join(names::LOCK), stage)?;
        let state_path = dir.join("mirror.json");
        let mut state: MirrorState = match fs::read(&state_path) {
            Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
            Err(_) => MirrorState::default(),
        };
        if state.partial || scope.placeholders() {
            // Placeholders are known to their process only: start afresh.
            remove_all(&dir.join("crawl"))?;
            state = MirrorState {
                partial: scope.placeholders(),
                ..MirrorState::default()
            };
        }
        // Placeholders read by ranges (integrity::read_ranges) come from this store
        // (a process works on one crawl directory: the last mirror opened is it).
        let remote = Arc::new(Remote::connect(uri)?);
        let ranges = remote.clone();
        integrity::set_remote_ranges(Arc::new(move |rs: &[(integrity::Remote, u64, usize)]| {
            ranges.read_object_ranges(rs)
        }));
        let mirror = Mirror {
            remote,
            root: dir.join("crawl"),
            state_path,
            state: std::sync::Mutex::new(MirrorState {
                uri: uri.as_str().to_string(),
                ..state
            }),
            stage: stage.to_string(),
            needs,
            scope,
            _lock: lock,
        };
        let mut req = mirror.pull()?;
        if let Some(job) = mirror.scope.job() {
            mirror.pull_job(job, &mut req)?;
        }
        mirror.pull_fetch_state(&mut req)?;
        tracing::info!(
            "{}: pulled into {} ({} GET, {} HEAD, {} LIST, {} bytes)",
            uri.as_str(),
            mirror.root.display(),
            req.get,
            req.head,
            req.other,
            req.bytes_down
        );
        Ok(mirror)
    }

    /// The local crawl directory the stage works on.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The object-store URI.
    pub fn uri(&self) -> &ObjectUri {
        &self.remote.uri
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MirrorState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn save_state(&self, state: &MirrorState) -> Result<()> {
        let bytes = serde_json::to_vec(state).map_err(|e| {
            self.remote
                .uri
                .error(format!("cannot encode the mirror state: {e}"))
        })?;
        let tmp = tmp_path(&self.state_path);
        fs::write(&tmp, bytes).at(&tmp)?;
        fs::rename(&tmp, &self.state_path).at(&self.state_path)
    }

    /// Brings the mirror to the current version of every unit.
    fn pull(&self) -> Result<Requests> {
        let mut req = Requests::default();
        let mut state = self.state().clone();
        let remote = &self.remote;
        let root = self.root.clone();
        let index_only = self.scope == Scope::Index;
        let result: Result<()> = remote.rt.block_on(async {
            let catalog = if index_only {
                None
            } else {
                remote.newest(&Unit::Catalog.name(), &mut req).await?
            };
            let live: BTreeSet<String> = catalog
                .as_ref()
                .filter(|c| !c.deleted)
                .map(|c| c.segments.iter().cloned().collect())
                .unwrap_or_default();
            let mut units: Vec<Unit> = FIXED.iter().filter(|u| self.syncs(u)).cloned().collect();
            units.extend(live.iter().map(|s| Unit::Segment(s.clone())));
            let mut any = false;
            for unit in &units {
                let name = unit.name();
                let newest = if *unit == Unit::Catalog {
                    catalog.clone()
                } else {
                    remote.newest(&name, &mut req).await?
                };
                let newest = newest.filter(|m| !m.deleted);
                any |= newest.is_some();
                let known = state.units.get(&name).cloned().unwrap_or_default();
                let Some(m) = newest else {
                    if let Some(base) = unit.local_base(&root) {
                        remove_all(&base)?;
                    } else if *unit == Unit::State {
                        for name in walk(&root, false)? {
                            let p = root.join(name);
                            fs::remove_file(&p).at(&p)?;
                        }
                    }
                    state.units.remove(&name);
                    continue;
                };
                let Some((dir, deep)) = unit.local(&root) else {
                    state.units.insert(
                        name,
                        UnitState {
                            version: m.version,
                            manifest: Some(m),
                            stats: BTreeMap::new(),
                        },
                    );
                    continue;
                };
                if known.version == m.version && unchanged(&dir, deep, &known)? {
                    continue;
                }
                let stats = self
                    .sync_unit(unit, &m, &dir, deep, &known, &mut req)
                    .await?;
                state.units.insert(
                    name,
                    UnitState {
                        version: m.version,
                        manifest: Some(m),
                        stats,
                    },
                );
            }
            if index_only {
                return Ok(());
            }
            // Local segments the catalog does not list: deleted remotely, or left by
            // a stage whose push failed.
            let seg_dir = root.join(names::SEGMENTS);
            if let Ok(entries) = fs::read_dir(&seg_dir) {
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if is_segment_name(&name) && !live.contains(&name) {
                        remove_all(&entry.path())?;
                        state.units.remove(&Unit::Segment(name).name());
                    }
                }
            }
            if !any {
                // Nothing on the store: no crawl directory, as for a local path.
                remove_all(&root)?;
                state.units.clear();
            }
            Ok(())
        });
        result?;
        self.save_state(&state)?;
        *self.state() = state;
        Ok(req)
    }

    /// Whether this mirror pulls and pushes `unit` of [`FIXED`]: the index only for a
    /// stage that needs it ([`MirrorNeeds::index`]); a reader of the index alone
    /// ([`Scope::Index`]) nothing else.
    fn syncs(&self, unit: &Unit) -> bool {
        match unit {
            Unit::Index => self.needs.index,
            _ => self.scope != Scope::Index,
        }
    }

    /// Makes the local files of a unit those of `m`: keeps files whose recorded
    /// stat and blake3 match, downloads the others, removes what `m` does not list.
    async fn sync_unit(
        &self,
        unit: &Unit,
        m: &VersionManifest,
        dir: &Path,
        deep: bool,
        known: &UnitState,
        req: &mut Requests,
    ) -> Result<BTreeMap<String, Stat>> {
        let (have, _) = scan(dir, deep, known)?;
        let have: BTreeMap<&str, &FileEntry> = have.iter().map(|f| (f.name.as_str(), f)).collect();
        let wanted: BTreeSet<&str> = m.files.iter().map(|f| f.name.as_str()).collect();
        for name in have.keys().filter(|n| !wanted.contains(*n)) {
            let p = dir.join(name);
            fs::remove_file(&p).at(&p)?;
        }
        let stale = |f: &&FileEntry| {
            have.get(f.name.as_str())
                .is_none_or(|h| h.blake3 != f.blake3 || h.size != f.size)
        };
        // A segment's `_meta.json` first: whether a task reads its crawl_fetch whole
        // depends on it (`MirrorNeeds::reads_whole`).
        let meta = m
            .files
            .iter()
            .find(|f| matches!(unit, Unit::Segment(_)) && f.name == names::META);
        if let Some(f) = meta.filter(|f| stale(f)) {
            self.remote.download(f, &dir.join(&f.name), req).await?;
        }
        let routed = meta.is_some()
            && super::parquet::read_json::<super::layout::SegmentMeta>(&dir.join(names::META))
                .is_ok_and(|sm| sm.redirects_in_crawl_parse);
        let (stand_ins, fetch): (Vec<&FileEntry>, Vec<&FileEntry>) = m
            .files
            .iter()
            .filter(|f| stale(f) && meta.is_none_or(|mf| mf.name != f.name))
            .partition(|f| self.stand_in(unit, f, routed));
        for f in stand_ins {
            integrity::create_placeholder(&dir.join(&f.name), remote_of(f))?;
        }
        for f in &fetch {
            tracing::debug!("GET {} of {}", f.name, m.unit);
        }
        let remote = &self.remote;
        let results: Vec<Result<Requests>> = futures::stream::iter(fetch)
            .map(|f| async move {
                let mut r = Requests::default();
                remote.download(f, &dir.join(&f.name), &mut r).await?;
                Ok(r)
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for r in results {
            let r = r?;
            req.get += r.get;
            req.bytes_down += r.bytes_down;
        }
        if m.files.is_empty() {
            fs::create_dir_all(dir).at(dir)?;
        }
        let mut stats = BTreeMap::new();
        for f in &m.files {
            stats.insert(f.name.clone(), stat(&dir.join(&f.name))?);
        }
        Ok(stats)
    }

    /// Whether the file `f` of `unit` is left on the store (a placeholder stands
    /// in for it) in this mirror's scope.
    fn stand_in(&self, unit: &Unit, f: &FileEntry, segment_routed: bool) -> bool {
        if *unit == Unit::Index {
            // A shard's files (`shard-NNNNN/...`): a task reads its partitions' shards
            // alone, a commit none (it links the attempts' shards).
            let Some(index) = file_partition(&f.name) else {
                return false;
            };
            return match &self.scope {
                Scope::Whole | Scope::Index => false,
                Scope::Meta | Scope::Job { .. } => true,
                Scope::Task { partitions, .. } => !partitions.contains(index),
            };
        }
        let mut parts = f.name.rsplit('/');
        let Some(index) = parts.next().and_then(part_index) else {
            return false;
        };
        let dataset = match (parts.next(), unit) {
            (Some(d), _) => d.to_string(),
            (None, Unit::Db(d)) => d.db().as_str().to_string(),
            (None, _) => String::new(),
        };
        match &self.scope {
            Scope::Whole | Scope::Index => false,
            Scope::Meta => true,
            // A commit reads the versioned datasets its stage reads whole (sitemap's
            // commit merges the fetch attempts' records into the whole sitemapdb).
            Scope::Job { .. } => !self.needs.job_reads_whole(&dataset),
            Scope::Task { partitions, .. } => {
                !partitions.contains(index)
                    && !self.needs.task_reads_whole(&dataset, segment_routed)
            }
        }
    }

    /// The local directory of `job`.
    fn job_dir(&self, job: &str) -> PathBuf {
        self.root.join(names::JOBS).join(job)
    }

    /// Materialises `job` from the store: one LIST of `_jobs/<job>/` (a job's own
    /// namespace, written by its tasks), then every attempt manifest (its small
    /// files downloaded, its parts as placeholders unless a task of the same
    /// partitions reads them) and every job-level file.
    fn pull_job(&self, job: &str, req: &mut Requests) -> Result<()> {
        let remote = &self.remote;
        let base = format!("{}/{job}", names::JOBS);
        let local = self.job_dir(job);
        self.update_state(|state| {
            remote.rt.block_on(async {
                req.other += 1;
                let listed: Vec<object_store::ObjectMeta> = remote
                    .store
                    .list(Some(&remote.key(&base)))
                    .try_collect()
                    .await
                    .map_err(|e| remote.err("LIST", &remote.key(&base), e))?;
                let job_key = remote.key(&base);
                let strip = job_key.as_ref().len();
                for meta in &listed {
                    let rel = meta
                        .location
                        .as_ref()
                        .get(strip..)
                        .unwrap_or_default()
                        .trim_start_matches('/')
                        .to_string();
                    state.job_keys.push(rel.clone());
                    if let Some(file) = rel.strip_prefix(&format!("{JOB_FILES}/")) {
                        let Some(bytes) = remote.get_opt(&meta.location, req).await? else {
                            continue;
                        };
                        let dest = local.join(file);
                        write_file(&dest, &bytes)?;
                        state.job_files.insert(file.to_string(), stat(&dest)?);
                        continue;
                    }
                    let Some(dir) = rel
                        .strip_prefix(&format!("{ATTEMPTS}/"))
                        .and_then(|r| r.strip_suffix(".json"))
                    else {
                        continue;
                    };
                    // A task needs only the attempts that share a partition with it
                    // (an earlier pass's, a finished twin's), not its sibling tasks':
                    // what a task reads does not grow with the number of tasks. A
                    // shuffle's attempts are the exception: every one of them holds
                    // parts of every partition (its own are taken below); of a
                    // shuffle its pass does not read, a task takes the small files
                    // (the report) and no part.
                    let shuffle = dir
                        .split('/')
                        .next()
                        .and_then(|c| c.strip_prefix(crate::store::jobs::SHUFFLE_PREFIX));
                    let no_parts = match (&self.scope, shuffle) {
                        (Scope::Task { pass, .. }, Some(name)) => {
                            !self.needs.reads_shuffle(pass.as_deref(), name)
                        }
                        _ => false,
                    };
                    if let Scope::Task { partitions, .. } = &self.scope
                        && shuffle.is_none()
                        && let Some(theirs) = dir.split('/').find_map(PartitionSet::from_dir_name)
                        && !theirs.iter().any(|i| partitions.contains(i))
                    {
                        continue;
                    }
                    let Some(bytes) = remote.get_opt(&meta.location, req).await? else {
                        continue;
                    };
                    let m: AttemptManifest =
                        serde_json::from_slice(&bytes).map_err(|e| Error::Integrity {
                            path: PathBuf::from(format!(
                                "{}/{}",
                                remote.uri.as_str(),
                                meta.location
                            )),
                            message: format!(
                                "not an attempt manifest ({e}); delete it and rerun the task"
                            ),
                        })?;
                    let at = local.join(dir);
                    for f in &m.files {
                        let dest = at.join(&f.name);
                        // A task reads its own partitions' parts of an earlier pass
                        // (pagerank's scores); a job step reads none.
                        let leave = match (file_partition(&f.name), &self.scope) {
                            (None, _) => false,
                            (Some(i), Scope::Task { partitions, .. }) => {
                                no_parts || !partitions.contains(i)
                            }
                            (Some(_), _) => true,
                        };
                        if leave {
                            integrity::create_placeholder(&dest, remote_of(f))?;
                        } else {
                            tracing::debug!("GET {} of attempt {dir}", f.name);
                            remote.download(f, &dest, req).await?;
                        }
                    }
                    fs::create_dir_all(&at).at(&at)?;
                    state.remote_attempts.insert(dir.to_string());
                }
                Ok(())
            })
        })
    }

    /// Publishes what a task or a job step left in the job's local directory: each
    /// finished attempt not pulled from the store (its new objects, then its
    /// manifest, created once: a second finish of the same attempt id is dropped)
    /// and each job-level file that is new or changed. After a job step whose stage
    /// removed the job (its commit), removes the job's keys from the store.
    fn push_job(&self, job: &str, report: &mut PushReport) -> Result<()> {
        let local = self.job_dir(job);
        let remote = &self.remote;
        let base = format!("{}/{job}", names::JOBS);
        self.update_state(|state| remote.rt.block_on(async {
            if !local.exists() {
                if matches!(self.scope, Scope::Job { .. }) {
                    for rel in &state.job_keys {
                        let key = remote.key(&format!("{base}/{rel}"));
                        report.requests.other += 1;
                        match remote.store.delete(&key).await {
                            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                            Err(e) => tracing::warn!("cannot remove {key}: {e} (gc does not; remove it by hand)"),
                        }
                    }
                    state.job_keys.clear();
                }
                return Ok(());
            }
            let mut attempts: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut loose = Vec::new();
            for rel in walk(&local, true)? {
                match attempt_of(&rel) {
                    Some((dir, _)) => attempts.entry(dir).or_default().push(rel),
                    None => loose.push(rel),
                }
            }
            // Objects the store holds already (content-addressed): an index task's
            // shard files hard-linked from the installed version are not sent again.
            let stored: BTreeSet<String> = state
                .units
                .get(&Unit::Index.name())
                .and_then(|u| u.manifest.as_ref())
                .map(|m| m.files.iter().map(|f| f.blake3.clone()).collect())
                .unwrap_or_default();
            for (dir, files) in attempts {
                if state.remote_attempts.contains(&dir)
                    || !files.iter().any(|f| f == &format!("{dir}/{REPORT}"))
                {
                    continue;
                }
                let at = local.join(&dir);
                let (entries, _) = scan(&at, true, &UnitState::default())?;
                let mut uploaded = 0;
                for f in &entries {
                    let path = at.join(&f.name);
                    if integrity::placeholder(&path).is_none() && !stored.contains(&f.blake3) {
                        remote.upload(&path, &f.blake3, &f.key, &mut report.requests).await?;
                        uploaded += 1;
                    }
                }
                report.uploaded += uploaded;
                test_pause(PAUSE_UPLOADED_ONE);
                let m = AttemptManifest {
                    format: ATTEMPT_FORMAT.to_string(),
                    job: job.to_string(),
                    dir: dir.clone(),
                    written_by: self.stage.clone(),
                    written_time: now_ms(),
                    files: entries,
                };
                let key = remote.key(&format!("{base}/{ATTEMPTS}/{dir}.json"));
                let body = serde_json::to_vec_pretty(&m)
                    .map_err(|e| remote.uri.error(format!("cannot encode a manifest: {e}")))?;
                report.requests.put += 1;
                match remote
                    .store
                    .put_opts(&key, PutPayload::from(body), PutOptions::from(PutMode::Create))
                    .await
                {
                    Ok(_) => report.committed.push(format!("{base}/{dir}")),
                    Err(object_store::Error::AlreadyExists { .. }) => tracing::warn!(
                        "attempt {dir} of job {job} had already finished on the store: keeping it, dropping this run's output"
                    ),
                    Err(e) => return Err(remote.err("PUT (create)", &key, e)),
                }
                state.remote_attempts.insert(dir);
            }
            for rel in loose {
                let path = local.join(&rel);
                let st = stat(&path)?;
                if state.job_files.get(&rel) == Some(&st) {
                    continue;
                }
                remote
                    .put_file(&path, &format!("{base}/{JOB_FILES}/{rel}"), &mut report.requests)
                    .await?;
                report.committed.push(format!("{base}/{JOB_FILES}/{rel}"));
                state.job_files.insert(rel, st);
            }
            if matches!(self.scope, Scope::Job { .. }) {
                // What a driver step removed from the job goes from the store too
                // (pagerank's check: the iterations no task reads again, a stop
                // marker taken back), so later tasks do not list and GET it.
                let gone: Vec<String> = state
                    .remote_attempts
                    .iter()
                    .filter(|d| !local.join(d).exists())
                    .cloned()
                    .collect();
                let files: Vec<String> = state
                    .job_files
                    .keys()
                    .filter(|f| !local.join(f).exists())
                    .cloned()
                    .collect();
                let keys = gone
                    .iter()
                    .map(|d| format!("{base}/{ATTEMPTS}/{d}.json"))
                    .chain(files.iter().map(|f| format!("{base}/{JOB_FILES}/{f}")));
                for rel in keys {
                    let key = remote.key(&rel);
                    report.requests.other += 1;
                    match remote.store.delete(&key).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(remote.err("DELETE", &key, e)),
                    }
                }
                for d in gone {
                    state.remote_attempts.remove(&d);
                }
                for f in files {
                    state.job_files.remove(&f);
                }
            }
            Ok(())
        }))
    }

    /// Uploads what the stage changed and commits a new version of every changed
    /// unit (segments first, then the catalog, then the datasets, the crawldb last).
    /// The first unit another writer committed first stops the push with an
    /// [`Error::Locked`]; units committed before it stay committed.
    pub fn push(&self) -> Result<PushReport> {
        let mut report = match &self.scope {
            Scope::Task { .. } | Scope::Meta | Scope::Index => PushReport::default(),
            _ => self.push_units()?,
        };
        if let Some(job) = self.scope.job() {
            self.push_job(job, &mut report)?;
        }
        self.push_fetch_state(&mut report)?;
        Ok(report)
    }

    /// The per-partition fetch state files a fetch run carries between runs
    /// (`fetch_state/<n>/p<i>/fetch.last_end` and `robots_cache.json` of the
    /// partitions it fetches; none for other stages), as paths under the root.
    /// Plain objects at the same keys: each partition has one writer at a time (the
    /// holder of its lease).
    fn fetch_state_files(&self) -> Vec<String> {
        if !self.needs.fetch_state {
            return Vec::new();
        }
        let dir = CrawlDir::new(&self.root);
        let Ok(meta) = dir.crawldb_meta() else {
            return Vec::new();
        };
        let n = meta.partitions;
        let set = match &self.scope {
            Scope::Task { partitions, .. } => partitions.resolve(n),
            Scope::Whole => PartitionSet::all(n),
            Scope::Job { .. } | Scope::Meta | Scope::Index => return Vec::new(),
        };
        set.iter()
            .filter(|&i| i < n)
            .flat_map(|i| [dir.fetch_last_end_of(n, i), dir.robots_cache_of(n, i)])
            .filter_map(|p| {
                p.strip_prefix(&self.root)
                    .ok()
                    .map(|r| r.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// Downloads the fetch state files of [`Mirror::fetch_state_files`] that exist.
    fn pull_fetch_state(&self, req: &mut Requests) -> Result<()> {
        let files = self.fetch_state_files();
        if files.is_empty() {
            return Ok(());
        }
        let remote = &self.remote;
        self.update_state(|state| {
            remote.rt.block_on(async {
                for rel in files {
                    let dest = self.root.join(&rel);
                    match remote.get_opt(&remote.key(&rel), req).await? {
                        Some(bytes) => {
                            write_file(&dest, &bytes)?;
                            state.fetch_state.insert(rel, stat(&dest)?);
                        }
                        None => {
                            state.fetch_state.remove(&rel);
                        }
                    }
                }
                Ok(())
            })
        })
    }

    /// Runs `f` on a copy of the mirror's record, then saves and installs the copy
    /// (also when `f` failed: what it recorded before failing happened).
    fn update_state(&self, f: impl FnOnce(&mut MirrorState) -> Result<()>) -> Result<()> {
        let mut state = self.state().clone();
        let result = f(&mut state);
        self.save_state(&state)?;
        *self.state() = state;
        result
    }

    /// Uploads the fetch state files of [`Mirror::fetch_state_files`] the run
    /// changed.
    fn push_fetch_state(&self, report: &mut PushReport) -> Result<()> {
        let files = self.fetch_state_files();
        if files.is_empty() {
            return Ok(());
        }
        let remote = &self.remote;
        self.update_state(|state| {
            remote.rt.block_on(async {
                for rel in files {
                    let path = self.root.join(&rel);
                    let Ok(st) = stat(&path) else { continue };
                    if state.fetch_state.get(&rel) == Some(&st) {
                        continue;
                    }
                    remote.put_file(&path, &rel, &mut report.requests).await?;
                    report.committed.push(rel.clone());
                    state.fetch_state.insert(rel, st);
                }
                Ok(())
            })
        })
    }

    /// The units' part of [`Mirror::push`].
    fn push_units(&self) -> Result<PushReport> {
        let mut state = self.state().clone();
        let root = self.root.clone();
        let mut units: BTreeSet<Unit> = FIXED.iter().filter(|u| self.syncs(u)).cloned().collect();
        let mut local_segments = BTreeSet::new();
        if let Ok(entries) = fs::read_dir(root.join(names::SEGMENTS)) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if is_segment_name(&name) && entry.path().is_dir() {
                    local_segments.insert(name.clone());
                    units.insert(Unit::Segment(name));
                }
            }
        }
        let catalog_name = Unit::Catalog.name();
        let known_catalog = state.units.get(&catalog_name).cloned().unwrap_or_default();
        for s in known_catalog
            .manifest
            .iter()
            .flat_map(|m| m.segments.iter())
        {
            units.insert(Unit::Segment(s.clone()));
        }
        // New versions to commit, in commit order (the set's order: segments,
        // catalog, state, pagerank, sitemapdb, linkdb, crawldb).
        let mut commits: Vec<Commit> = Vec::new();
        // By key: the object's blake3 and how it gets there.
        let mut uploads: BTreeMap<String, (String, Fill)> = BTreeMap::new();
        let time = now_ms();
        let commit = commit_id();
        let new_manifest = |unit: &Unit, base: &UnitState, files: Vec<FileEntry>| VersionManifest {
            format: FORMAT.to_string(),
            unit: unit.name(),
            version: base.version + 1,
            commit: commit.clone(),
            written_by: self.stage.clone(),
            written_time: time,
            deleted: false,
            files,
            segments: Vec::new(),
            tables: BTreeMap::new(),
        };
        for unit in &units {
            let name = unit.name();
            let base = state.units.get(&name).cloned().unwrap_or_default();
            let Some((dir, deep)) = unit.local(&root) else {
                // The catalog: the local segments, when they differ.
                let known: BTreeSet<String> = base
                    .manifest
                    .iter()
                    .flat_map(|m| m.segments.iter().cloned())
                    .collect();
                if known != local_segments {
                    let mut m = new_manifest(unit, &base, Vec::new());
                    m.segments = local_segments.iter().cloned().collect();
                    commits.push(Commit {
                        unit: unit.clone(),
                        manifest: m,
                        stats: BTreeMap::new(),
                        base: base.manifest.clone(),
                    });
                }
                continue;
            };
            let (mut files, stats) = scan(&dir, deep, &base)?;
            let before = base.manifest.as_ref();
            // Unchanged: the same files (the keys aside: a unit of the layout before
            // open tables is not moved by a stage that changed nothing in it, a
            // reader's push; its next change or `gc --migrate` moves it).
            let content = |fs: &[FileEntry]| -> Vec<(String, u64, String)> {
                fs.iter()
                    .map(|f| (f.name.clone(), f.size, f.blake3.clone()))
                    .collect()
            };
            if !files.is_empty() && before.is_some_and(|m| content(&m.files) == content(&files)) {
                if let Some(s) = state.units.get_mut(&name) {
                    s.stats = stats;
                }
                continue;
            }
            // Table files get their keys in their tables (an old-layout unit is
            // migrated by its next commit), and the tables their log versions.
            let (tables, fills) = plan_tables(
                unit,
                before,
                &mut files,
                Some(&dir),
                &mut |f: &FileEntry| local_schema(&dir.join(&f.name)),
                &commit,
            )?;
            if files.is_empty() {
                if matches!(unit, Unit::Segment(_)) && before.is_some() {
                    let mut m = new_manifest(unit, &base, Vec::new());
                    m.deleted = true;
                    m.tables = tables;
                    commits.push(Commit {
                        unit: unit.clone(),
                        manifest: m,
                        stats: BTreeMap::new(),
                        base: base.manifest.clone(),
                    });
                }
                continue;
            }
            for (key, fill) in fills {
                let b3 = files
                    .iter()
                    .find(|f| f.key == key)
                    .map(|f| f.blake3.clone())
                    .unwrap_or_default();
                uploads.insert(key, (b3, fill));
            }
            let old: BTreeSet<&str> = before
                .into_iter()
                .flat_map(|m| m.files.iter())
                .map(|f| f.blake3.as_str())
                .collect();
            for f in files.iter().filter(|f| !old.contains(f.blake3.as_str())) {
                if unit.has_tables() && delta::table_file(&f.name).is_some() {
                    continue;
                }
                let path = dir.join(&f.name);
                // A placeholder's object is on the store already (an attempt's).
                if integrity::placeholder(&path).is_none() {
                    uploads.insert(f.key.clone(), (f.blake3.clone(), Fill::Upload(path)));
                }
            }
            let mut m = new_manifest(unit, &base, files);
            m.tables = tables;
            commits.push(Commit {
                unit: unit.clone(),
                manifest: m,
                stats,
                base: base.manifest.clone(),
            });
        }
        let mut report = PushReport::default();
        let remote = &self.remote;
        let result: Result<()> = remote.rt.block_on(async {
            let mut first = true;
            let mut stream = futures::stream::iter(uploads.iter())
                .map(|(key, (b3, fill))| async move {
                    let mut r = Requests::default();
                    match fill {
                        Fill::Upload(path) => remote.upload(path, b3, key, &mut r).await?,
                        Fill::Copy(from) => remote.copy(from, key, &mut r).await?,
                    }
                    Ok::<_, Error>(r)
                })
                .buffer_unordered(CONCURRENCY);
            while let Some(r) = stream.try_next().await? {
                report.requests.put += r.put;
                report.requests.bytes_up += r.bytes_up;
                report.uploaded += 1;
                if first {
                    first = false;
                    test_pause(PAUSE_UPLOADED_ONE);
                }
            }
            drop(stream);
            test_pause(PAUSE_BEFORE_COMMIT);
            for c in &commits {
                let (unit, m, stats) = (&c.unit, &c.manifest, &c.stats);
                // The version this one replaces has its log entries (its writer
                // may have died between the two), then this one commits and
                // writes its own.
                // A log entry not written is written by the next commit or gc: a
                // failure to write one does not stop the units after this one.
                let mut contiguous = true;
                if let Some(b) = &c.base
                    && let Err(e) = remote.repair_logs(b, &mut report.requests).await
                {
                    tracing::warn!("{e}");
                    contiguous = false;
                }
                remote.commit(m, &mut report.requests).await?;
                // Never an entry after a missing one: the readers would stop there.
                if contiguous
                    && let Err(e) = remote
                        .write_logs(c.base.as_ref(), m, &mut report.requests)
                        .await
                {
                    tracing::warn!(
                        "the Delta log of {} version {} was not written ({e}); the next commit of {} or gc writes it",
                        m.unit,
                        m.version,
                        m.unit
                    );
                }
                report.committed.push(format!("{}@{}", m.unit, m.version));
                if m.deleted {
                    state.units.remove(&m.unit);
                } else {
                    state.units.insert(
                        unit.name(),
                        UnitState {
                            version: m.version,
                            manifest: Some(m.clone()),
                            stats: stats.clone(),
                        },
                    );
                }
            }
            Ok(())
        });
        // Record what was committed even when a later unit lost its race.
        self.save_state(&state)?;
        *self.state() = state;
        result?;
        Ok(report)
    }
}

/// The version tag of a lease object as read (`<e-tag>\n<version>`): S3 and Azure
/// update conditionally on the e-tag, GCS on the generation (`version`).
fn lease_tag(meta: &object_store::ObjectMeta) -> String {
    format!(
        "{}\n{}",
        meta.e_tag.as_deref().unwrap_or_default(),
        meta.version.as_deref().unwrap_or_default()
    )
}

/// Leases on the store (src/store/lease.rs): created with `If-None-Match: *`,
/// taken over and renewed with `If-Match: <e-tag read>` (GCS: the generation read).
impl super::lease::LeaseStore for Mirror {
    /// `file://` stores have no conditional update (`object_store`'s local store).
    fn renews(&self) -> bool {
        self.remote.uri.scheme != "file"
    }

    fn create(&self, rel: &str, body: &str) -> Result<Option<(String, String)>> {
        let remote = &self.remote;
        let key = remote.key(rel);
        remote.rt.block_on(async {
            let opts = PutOptions::from(PutMode::Create);
            match remote
                .store
                .put_opts(&key, PutPayload::from(body.as_bytes().to_vec()), opts)
                .await
            {
                Ok(_) => return Ok(None),
                Err(object_store::Error::AlreadyExists { .. }) => {}
                Err(e) => return Err(remote.err("PUT (create)", &key, e)),
            }
            match remote.store.get(&key).await {
                Ok(r) => {
                    let tag = lease_tag(&r.meta);
                    let b = r.bytes().await.map_err(|e| remote.err("GET", &key, e))?;
                    Ok(Some((String::from_utf8_lossy(&b).into_owned(), tag)))
                }
                // Released meanwhile: an empty, expired-looking answer makes the
                // caller retry the create through a failing replace.
                Err(object_store::Error::NotFound { .. }) => {
                    Ok(Some((String::new(), String::new())))
                }
                Err(e) => Err(remote.err("GET", &key, e)),
            }
        })
    }

    fn replace(&self, rel: &str, body: &str, tag: &str) -> Result<bool> {
        let remote = &self.remote;
        let key = remote.key(rel);
        if tag.trim().is_empty() {
            return Ok(false);
        }
        remote.rt.block_on(async {
            let (e_tag, version) = match tag.split_once('\n') {
                Some((e, v)) => (e, (!v.is_empty()).then(|| v.to_string())),
                None => (tag, None),
            };
            let opts = PutOptions::from(PutMode::Update(object_store::UpdateVersion {
                e_tag: (!e_tag.is_empty()).then(|| e_tag.to_string()),
                version,
            }));
            match remote
                .store
                .put_opts(&key, PutPayload::from(body.as_bytes().to_vec()), opts)
                .await
            {
                Ok(_) => Ok(true),
                Err(object_store::Error::Precondition { .. })
                | Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(remote.err("PUT (If-Match)", &key, e)),
            }
        })
    }

    fn release(&self, rel: &str, body: &str) {
        let remote = &self.remote;
        let key = remote.key(rel);
        remote.rt.block_on(async {
            let ours = match remote.store.get(&key).await {
                Ok(r) => r.bytes().await.is_ok_and(|b| b.as_ref() == body.as_bytes()),
                Err(_) => false,
            };
            if ours && let Err(e) = remote.store.delete(&key).await {
                tracing::warn!("cannot release the lease {key}: {e} (it expires by itself)");
            }
        });
    }

    fn renew(&self, rel: &str, old: &str, new: &str) -> Result<bool> {
        let remote = &self.remote;
        let key = remote.key(rel);
        let tag = remote.rt.block_on(async {
            match remote.store.get(&key).await {
                Ok(r) => {
                    let tag = lease_tag(&r.meta);
                    let b = r.bytes().await.map_err(|e| remote.err("GET", &key, e))?;
                    Ok((b.as_ref() == old.as_bytes()).then_some(tag))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(remote.err("GET", &key, e)),
            }
        })?;
        match tag {
            // Still ours: replaced only if nobody changed it since it was read.
            Some(tag) => self.replace(rel, new, &tag),
            None => Ok(false),
        }
    }
}

fn remove_all(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// What [`gc`] found and did.
#[derive(Debug, Clone, Default)]
pub struct GcReport {
    /// Units with a version.
    pub units: usize,
    /// Versions kept per unit (`--keep-versions`).
    pub keep_versions: usize,
    /// Units moved to the open-table layout (or that would be, with `dry_run`, or
    /// that are in the old layout, without `migrate`): their Parquet parts copied
    /// into their tables and a version with their Delta logs committed.
    pub migrated: usize,
    /// Whether units in the old layout were to be moved (`--migrate`).
    pub migrate: bool,
    /// Versions whose missing Delta log entries were written (a writer died between
    /// its version and its log).
    pub repaired_logs: usize,
    /// Objects referenced by a kept version (kept).
    pub kept: u64,
    /// Unreferenced objects removed (or that would be, with `dry_run`).
    pub removed: u64,
    /// Their bytes.
    pub removed_bytes: u64,
    /// Version manifests removed: older than the kept ones, or of units no longer
    /// live (with their Delta logs).
    pub removed_versions: u64,
    /// Keys under `_jobs/` older than the minimum age removed: what a zombie attempt
    /// published after its job's commit, or a job never committed.
    pub removed_job_keys: u64,
    /// Unreferenced objects younger than the minimum age (kept: a running stage may
    /// be about to commit them).
    pub too_young: u64,
    /// Whether nothing was deleted.
    pub dry_run: bool,
}

impl std::fmt::Display for GcReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (removed, migrated) = match (self.dry_run, self.migrate) {
            (true, true) => ("would remove", "would migrate"),
            (false, true) => ("removed", "migrated"),
            (true, false) => ("would remove", "found (gc --migrate moves them)"),
            (false, false) => ("removed", "found (gc --migrate moves them)"),
        };
        write!(
            f,
            "{removed} {} unreferenced objects ({} bytes), {} old version manifests and {} job keys older than --min-age; kept {} objects of the last {} versions of {} units ({} unreferenced but younger than --min-age); {migrated}: {} units in the layout before open tables; wrote the missing Delta log entries of {} versions",
            self.removed,
            self.removed_bytes,
            self.removed_versions,
            self.removed_job_keys,
            self.kept,
            self.keep_versions,
            self.units,
            self.too_young,
            self.migrated,
            self.repaired_logs,
        )
    }
}

/// What [`gc`] does.
#[derive(Debug, Clone)]
pub struct GcOptions {
    /// Unreferenced objects younger than this are kept.
    pub min_age: Duration,
    /// Keep what the last N versions of every unit need (at least 2).
    pub keep_versions: usize,
    /// Move the units still in the layout before open tables to them.
    pub migrate: bool,
    /// Count only.
    pub dry_run: bool,
}

/// Whether version `m` of `unit` is in the layout before open tables: a Parquet
/// part whose object is not its table's data file, or a table without a log.
fn needs_migration(unit: &Unit, m: &VersionManifest) -> bool {
    unit.has_tables()
        && !m.deleted
        && m.files.iter().any(|f| {
            delta::table_file(&f.name).is_some_and(|(dir, file)| {
                !m.tables.contains_key(dir)
                    || f.key
                        != format!(
                            "{}/{}",
                            table_root(&m.unit, dir),
                            delta::data_name(file, &f.blake3)
                        )
            })
        })
}

impl Remote {
    /// Moves version `m` of `unit` to the open-table layout: copies its Parquet
    /// parts into their tables on the store, commits the next version naming them
    /// and writes the tables' Delta logs. `false` when another writer committed
    /// first (its commit migrates the unit).
    fn migrate(&self, unit: &Unit, m: &VersionManifest, req: &mut Requests) -> Result<bool> {
        let mut files = m.files.clone();
        let commit = commit_id();
        let (tables, fills) = plan_tables(
            unit,
            Some(m),
            &mut files,
            None,
            &mut |f: &FileEntry| self.rt.block_on(self.object_schema(&f.key, f.size, req)),
            &commit,
        )?;
        let next = VersionManifest {
            format: FORMAT.to_string(),
            unit: m.unit.clone(),
            version: m.version + 1,
            commit,
            written_by: "gc".to_string(),
            written_time: now_ms(),
            deleted: false,
            files,
            segments: Vec::new(),
            tables,
        };
        self.rt.block_on(async {
            for (key, fill) in &fills {
                if let Fill::Copy(from) = fill {
                    self.copy(from, key, req).await?;
                }
            }
            match self.commit(&next, req).await {
                Ok(()) => {}
                Err(Error::Locked { .. }) => return Ok(false),
                Err(e) => return Err(e),
            }
            self.write_logs(Some(m), &next, req).await?;
            Ok(true)
        })
    }
}

/// Removes from the object-store crawl directory at `uri` every object that none of
/// the last `keep` versions of a live unit references, every older version, the
/// versions and Delta logs of segments the catalog no longer lists, and every key
/// under `_jobs/` older than `min_age` (a committed job's keys are deleted by its
/// commit: what remains is a zombie's late attempt or a job never committed);
/// objects younger than `min_age` are kept (a running stage or job may be about to
/// commit them). First it moves every live unit still in the layout before open
/// tables to them, and writes the Delta log entries a dead writer left missing.
pub fn gc(uri: &ObjectUri, opts: &GcOptions) -> Result<GcReport> {
    // The version before the newest is `old`, and what a missing log entry of the
    // newest is written again from.
    let keep = opts.keep_versions.max(2);
    let dry_run = opts.dry_run;
    let min_age = opts.min_age;
    let remote = Remote::connect(uri)?;
    let mut report = GcReport {
        dry_run,
        migrate: opts.migrate,
        keep_versions: keep,
        ..GcReport::default()
    };
    let mut req = Requests::default();
    let catalog = remote
        .rt
        .block_on(remote.newest(&Unit::Catalog.name(), &mut req))?;
    // The open-table layout and its logs, unit by unit (the current catalog's
    // segments: the older catalogs' are on their way out).
    let current: BTreeSet<String> = FIXED
        .iter()
        .map(Unit::name)
        .chain(
            catalog
                .iter()
                .flat_map(|c| c.segments.iter())
                .map(|s| Unit::Segment(s.clone()).name()),
        )
        .collect();
    for name in &current {
        let Some(unit) = Unit::from_name(name) else {
            continue;
        };
        if !unit.has_tables() {
            continue;
        }
        let Some(m) = remote.rt.block_on(remote.newest(name, &mut req))? else {
            continue;
        };
        if m.deleted {
            continue;
        }
        if needs_migration(&unit, &m) {
            // Only when asked: it commits a version, which a stage writing the
            // unit at the same time would lose its race to.
            if !opts.migrate || dry_run {
                report.migrated += 1;
            } else {
                match remote.migrate(&unit, &m, &mut req) {
                    Ok(true) => report.migrated += 1,
                    Ok(false) => {}
                    Err(e) => tracing::warn!("{name} was not moved to open tables: {e}"),
                }
            }
        } else if !dry_run {
            match remote.rt.block_on(remote.repair_logs(&m, &mut req)) {
                Ok(n) => report.repaired_logs += n,
                Err(e) => tracing::warn!("the Delta log of {name}: {e}"),
            }
        }
    }
    let result: Result<()> = remote.rt.block_on(async {
        let listed: Vec<object_store::ObjectMeta> = remote
            .store
            .list(Some(&remote.prefix))
            .try_collect()
            .await
            .map_err(|e| remote.err("LIST", &remote.prefix, e))?;
        // Live units, read after the listing (a segment committed since is not in
        // it): the fixed ones and the segments of the catalog's kept versions.
        let mut live: BTreeSet<String> = FIXED.iter().map(Unit::name).collect();
        if let Some(c) = remote.newest(&Unit::Catalog.name(), &mut req).await? {
            live.extend(c.segments.iter().map(|s| Unit::Segment(s.clone()).name()));
            for n in (c.version.saturating_sub(keep as u64 - 1)..c.version).filter(|&n| n > 0) {
                if let Some(old) = remote.manifest(&c.unit, n, &mut req).await? {
                    live.extend(old.segments.iter().map(|s| Unit::Segment(s.clone()).name()));
                }
            }
        }
        let prefix_len = remote.prefix.as_ref().len();
        let rel = |k: &Key| -> String {
            k.as_ref()
                .get(prefix_len..)
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string()
        };
        let now = chrono::Utc::now();
        let min_age = chrono::Duration::from_std(min_age).unwrap_or(chrono::Duration::MAX);
        // A committed job's keys are deleted by its commit; what remains under
        // `_jobs/` past the minimum age is a zombie's late attempt or an abandoned job.
        let jobs_prefix = format!("{}/", names::JOBS);
        let doomed_jobs: Vec<Key> = listed
            .iter()
            .filter(|m| rel(&m.location).starts_with(&jobs_prefix))
            .filter(|m| now - m.last_modified >= min_age)
            .map(|m| m.location.clone())
            .collect();
        report.removed_job_keys = doomed_jobs.len() as u64;
        // The unit a key belongs to (`segments/<s>` or the first component).
        let unit_of = |r: &str| -> String {
            let mut parts = r.split('/');
            match (parts.next(), parts.next()) {
                (Some(first), Some(s)) if first == names::SEGMENTS && is_segment_name(s) => {
                    format!("{first}/{s}")
                }
                (Some(first), _) => first.to_string(),
                _ => String::new(),
            }
        };
        // Versions by unit, from the listing; data objects (the content-addressed
        // ones and the tables' data files); the logs of dead segments.
        let mut versions: BTreeMap<String, Vec<(u64, Key)>> = BTreeMap::new();
        let mut objects: Vec<&object_store::ObjectMeta> = Vec::new();
        let mut dead_logs: Vec<Key> = Vec::new();
        let log_dir = format!("/{}/", delta::LOG_DIR);
        for meta in &listed {
            let r = rel(&meta.location);
            if r.starts_with(&jobs_prefix) {
                continue;
            }
            let file = r.rsplit('/').next().unwrap_or_default();
            if r.starts_with(&format!("{OBJECTS}/")) || delta::is_data_name(file) {
                objects.push(meta);
            } else if r.contains(&log_dir) {
                if !live.contains(&unit_of(&r)) {
                    dead_logs.push(meta.location.clone());
                }
            } else if let Some((unit, file)) = r.split_once(&format!("/{VERSIONS}/"))
                && let Some(n) = file
                    .strip_suffix(".json")
                    .and_then(|n| n.parse::<u64>().ok())
            {
                versions
                    .entry(unit.to_string())
                    .or_default()
                    .push((n, meta.location.clone()));
            }
        }
        let mut referenced: BTreeSet<String> = BTreeSet::new();
        let mut doomed_versions: Vec<Key> = Vec::new();
        for (unit, mut list) in versions {
            list.sort();
            if !live.contains(&unit) {
                doomed_versions.extend(list.into_iter().map(|(_, k)| k));
                continue;
            }
            report.units += 1;
            let keep_from = list.len().saturating_sub(keep);
            for (i, (n, key)) in list.into_iter().enumerate() {
                if i < keep_from {
                    doomed_versions.push(key);
                    continue;
                }
                if let Some(m) = remote.manifest(&unit, n, &mut req).await? {
                    referenced.extend(m.files.into_iter().map(|f| f.key));
                }
            }
        }
        let mut doomed: Vec<Key> = Vec::new();
        for meta in objects {
            if referenced.contains(&rel(&meta.location)) {
                report.kept += 1;
            } else if now - meta.last_modified < min_age {
                report.too_young += 1;
            } else {
                report.removed += 1;
                report.removed_bytes += meta.size;
                doomed.push(meta.location.clone());
            }
        }
        report.removed_versions = doomed_versions.len() as u64;
        if dry_run {
            return Ok(());
        }
        // Objects first: a version is removed only after what it referenced, and
        // a dead segment's logs before its versions.
        for key in doomed
            .iter()
            .chain(dead_logs.iter())
            .chain(doomed_versions.iter())
            .chain(doomed_jobs.iter())
        {
            match remote.store.delete(key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(remote.err("DELETE", key, e)),
            }
        }
        Ok(())
    });
    result?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse() {
        assert_eq!(
            CrawlUri::parse(Path::new("crawl")).unwrap(),
            CrawlUri::Local(PathBuf::from("crawl"))
        );
        assert_eq!(
            CrawlUri::parse(Path::new("/tmp/x")).unwrap(),
            CrawlUri::Local(PathBuf::from("/tmp/x"))
        );
        let CrawlUri::Object(o) = CrawlUri::parse(Path::new("s3://b/p/q/")).unwrap() else {
            panic!("not an object uri")
        };
        assert_eq!(o.as_str(), "s3://b/p/q");
        assert!(CrawlUri::parse(Path::new("s3://")).is_err());
        assert!(matches!(
            CrawlUri::parse(Path::new("file:///tmp/c")).unwrap(),
            CrawlUri::Object(_)
        ));
    }

    /// What a stage declares it reads whole is what a task's mirror pulls whole.
    #[test]
    fn declared_whole_reads() {
        use names::SegmentDataset::{CrawlFetch, CrawlParse, Robots};
        let needs = MirrorNeeds {
            shuffles: &[],
            reads_whole: &[
                WholeRead::UnlessRouted(CrawlFetch),
                WholeRead::Always(Robots),
            ],
            fetch_state: false,
            index: false,
        };
        assert!(needs.task_reads_whole(CrawlFetch.as_str(), false));
        assert!(!needs.task_reads_whole(CrawlFetch.as_str(), true));
        assert!(needs.task_reads_whole(Robots.as_str(), true));
        assert!(!needs.task_reads_whole(CrawlParse.as_str(), false));
        assert!(!MirrorNeeds::NONE.task_reads_whole(Robots.as_str(), false));
    }

    /// A pass of an iteration reads the shuffles its iteration names, no other.
    #[test]
    fn iteration_shuffles() {
        let needs = MirrorNeeds {
            shuffles: &[
                ("graph", &["links"]),
                ("iterate", &["graph", "rank.{k-1}"]),
                ("rewrite", &["graph", "rank.{k}"]),
            ],
            reads_whole: &[],
            fetch_state: false,
            index: false,
        };
        assert!(needs.reads_shuffle(Some("graph"), "links"));
        assert!(!needs.reads_shuffle(Some("links"), "links"));
        assert!(needs.reads_shuffle(Some("iterate@3"), "rank.2"));
        assert!(needs.reads_shuffle(Some("iterate@3"), "graph"));
        assert!(!needs.reads_shuffle(Some("iterate@3"), "rank.3"));
        assert!(!needs.reads_shuffle(Some("iterate@3"), "rank.1"));
        assert!(!needs.reads_shuffle(Some("iterate@12"), "rank.1"));
        assert!(!needs.reads_shuffle(Some("iterate@0"), "rank.0"));
        assert!(needs.reads_shuffle(Some("rewrite@7"), "rank.7"));
        assert!(!needs.reads_shuffle(Some("rewrite"), "rank.7"));
    }

    /// Two mirrors of one `file://` store: pull, change, push; the second writer
    /// that read the same version loses with a clear error; gc keeps current and old.
    #[test]
    fn commit_race_and_gc_on_a_file_store() {
        let t = tempfile::tempdir().unwrap();
        let store = format!("file://{}", t.path().join("store").display());
        let CrawlUri::Object(uri) = CrawlUri::parse(Path::new(&store)).unwrap() else {
            panic!("not an object uri")
        };
        let work_a = t.path().join("a");
        let work_b = t.path().join("b");
        let write = |m: &Mirror, text: &str| {
            let dir = m.root().join(names::CRAWLDB).join(names::CURRENT);
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join(names::META), text).unwrap();
        };
        {
            let a = Mirror::open(&uri, Some(&work_a), "test").unwrap();
            assert!(!a.root().exists());
            write(&a, "1");
            let r = a.push().unwrap();
            assert_eq!(r.committed, vec!["crawldb@1".to_string()]);
        }
        let a = Mirror::open(&uri, Some(&work_a), "test").unwrap();
        let b = Mirror::open(&uri, Some(&work_b), "test").unwrap();
        let meta = |m: &Mirror| {
            fs::read_to_string(
                m.root()
                    .join(names::CRAWLDB)
                    .join(names::CURRENT)
                    .join(names::META),
            )
            .unwrap()
        };
        assert_eq!(meta(&b), "1");
        write(&a, "2a");
        write(&b, "2b");
        a.push().unwrap();
        let err = b.push().unwrap_err();
        assert!(matches!(err, Error::Locked { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("committed version 2 of crawldb first"),
            "{err}"
        );
        drop((a, b));
        let c = Mirror::open(&uri, Some(&work_b), "test").unwrap();
        assert_eq!(meta(&c), "2a");
        write(&c, "3");
        c.push().unwrap();
        drop(c);
        // Versions 1..3 hold "1", "2a", "3": gc keeps 2 and 3 and removes "1"
        // and the loser's "2b" (never referenced).
        let r = gc(
            &uri,
            &GcOptions {
                min_age: Duration::ZERO,
                keep_versions: 2,
                migrate: false,
                dry_run: false,
            },
        )
        .unwrap();
        assert_eq!((r.removed, r.removed_versions, r.kept), (2, 1, 2), "{r}");
        let d = Mirror::open(&uri, Some(&t.path().join("d")), "test").unwrap();
        assert_eq!(meta(&d), "3");
    }
}
