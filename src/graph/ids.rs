//! URL -> dense id assignment and the page graph built from an [`EdgeSource`].
//!
//! The build makes two passes over the edge source, file by file in parallel, and
//! never holds an edge list:
//!
//! 1. **URL table.** Every URL is hashed (64-bit FxHash) and interned into one of
//!    [`SHARDS`] shards chosen by hash bits; a shard is a string arena (all its URLs
//!    back to back in one `String`, with `u32` start offsets) and a hash table of
//!    `(local index, 32 hash bits)` into it. Lookups compare the URL bytes, so two
//!    URLs with the same hash are never confused: the hash only picks the bucket.
//!    Workers buffer URLs per shard and insert them a batch at a time under the
//!    shard's lock; each URL's count of (non-distinct) out-links is kept beside it.
//! 2. **Ids.** Each distinct URL gets its partition (`Partitioner::of_host`); a
//!    counting sort by partition and a sort by URL within each partition give the
//!    final order, so every partition is a contiguous id range in URL order (the
//!    order of the crawldb's and `pagerank/`'s parts). The out-link counts become
//!    the CSR offsets.
//! 3. **Edges.** The second pass looks both ends of every edge up in the (now
//!    read-only, lock-free) table and writes the target into its source's slot range
//!    of the CSR target array; each node's list is then sorted and deduplicated in
//!    parallel and the array compacted.
//!
//! Peak memory is therefore the URL table plus the out-link CSR (with duplicate
//! links until the compaction), not a URL string per edge or an edge list.

use std::borrow::Cow;
use std::hash::Hasher;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hashbrown::HashTable;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHasher};

use super::csr::Csr;
use super::source::EdgeSource;
use crate::error::{Error, Result};
use crate::store::partition::Partitioner;
use crate::urls::host_of;

/// Bits of a temporary URL id that name its shard.
const SHARD_BITS: u32 = 6;
/// Number of URL table shards.
pub const SHARDS: usize = 1 << SHARD_BITS;
/// URLs per shard at most (the rest of a `u32` temporary id).
const MAX_PER_SHARD: usize = 1 << (32 - SHARD_BITS);
/// URLs buffered per shard by a scan worker before they are inserted.
const PENDING: usize = 1024;
/// Nodes per parallel work item when compacting adjacency lists.
const CHUNK: usize = 4096;

/// CPU seconds (user + system) this process has used, for the build's debug log.
fn cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let u: f64 = f.get(11)?.parse().ok()?;
            let k: f64 = f.get(12)?.parse().ok()?;
            Some((u + k) / 100.0)
        })
        .unwrap_or(0.0)
}

/// The 64-bit hash of a URL.
fn url_hash(url: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(url.as_bytes());
    h.finish()
}

/// The shard of a URL hash (bits 40.., independent of the 32 bits the shard's
/// table uses).
fn shard_of(h: u64) -> usize {
    (h >> 40) as usize & (SHARDS - 1)
}

/// The 64-bit hash kept in a table slot.
fn slot_hash(slot: &[u32; 3]) -> u64 {
    (u64::from(slot[2]) << 32) | u64::from(slot[1])
}

fn temp_id(shard: usize, local: u32) -> u32 {
    (local << SHARD_BITS) | shard as u32
}

fn split_temp(t: u32) -> (usize, usize) {
    ((t as usize) & (SHARDS - 1), (t >> SHARD_BITS) as usize)
}

/// One shard of the URL table.
#[derive(Debug)]
struct Shard {
    /// `[id, low, high 32 bits of the URL's hash]`: the local index during the
    /// first pass, the final node id after [`Shard::remap`].
    table: HashTable<[u32; 3]>,
    /// The URLs, back to back.
    arena: String,
    /// URL `i` is `arena[starts[i]..starts[i + 1]]`.
    starts: Vec<u32>,
    /// During the first pass: out-links (with duplicates) per URL; then, briefly,
    /// the final id of each URL.
    counts: Vec<u32>,
    /// Whether two different URLs of this shard have the same 64-bit hash: then
    /// lookups compare the URL bytes, not only the hash (see [`PageGraph::id_of`]).
    collided: bool,
}

impl Default for Shard {
    fn default() -> Self {
        Shard {
            table: HashTable::new(),
            arena: String::new(),
            starts: vec![0],
            counts: Vec::new(),
            collided: false,
        }
    }
}

impl Shard {
    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn url(&self, local: usize) -> &str {
        &self.arena[self.starts[local] as usize..self.starts[local + 1] as usize]
    }

    /// Interns `url` (first pass: slots hold local indices; the bytes are always
    /// compared) and adds `out_links` to its count.
    fn intern(&mut self, h: u64, url: &str, out_links: u32) -> Result<()> {
        let mut collision = false;
        let found = self
            .table
            .find(h, |slot| {
                slot_hash(slot) == h && {
                    let same = self.url(slot[0] as usize) == url;
                    collision |= !same;
                    same
                }
            })
            .map(|slot| slot[0] as usize);
        self.collided |= collision;
        let local = match found {
            Some(i) => i,
            None => {
                let i = self.len();
                let end = self.arena.len() + url.len();
                if i >= MAX_PER_SHARD || end > u32::MAX as usize {
                    return Err(Error::input(
                        "graph",
                        "too many distinct URLs for 32-bit ids (about 4 billion URLs or 256 GB of URL text)",
                    ));
                }
                self.arena.push_str(url);
                self.starts.push(end as u32);
                self.counts.push(0);
                self.table
                    .insert_unique(h, [i as u32, h as u32, (h >> 32) as u32], slot_hash);
                i
            }
        };
        self.counts[local] = self.counts[local].saturating_add(out_links);
        Ok(())
    }

    /// Replaces the local indices in the table by the final ids `perm[local]`.
    fn remap(&mut self, perm: &[u32]) {
        for slot in self.table.iter_mut() {
            slot[0] = perm[slot[0] as usize];
        }
    }

    /// The final id of the URL hashing to `h` (after [`Shard::remap`]); in a shard
    /// with a hash collision, `is_url(id)` must also say that node `id` is that URL.
    fn find(&self, h: u64, is_url: impl Fn(u32) -> bool) -> Option<u32> {
        self.table
            .find(h, |slot| {
                slot_hash(slot) == h && (!self.collided || is_url(slot[0]))
            })
            .map(|slot| slot[0])
    }

    fn heap_bytes(&self) -> usize {
        self.table.capacity() * 13
            + self.arena.capacity()
            + (self.starts.capacity() + self.counts.capacity()) * 4
    }
}

/// URLs a scan worker has not yet inserted into one shard.
#[derive(Default)]
struct Pending {
    /// `(hash, start in bytes, end in bytes, out-links)`.
    items: Vec<(u64, u32, u32, u32)>,
    bytes: String,
}

/// A scan worker's buffers for the first pass.
struct Interning<'a> {
    shards: &'a [Mutex<Shard>],
    pending: Vec<Pending>,
    last_src: String,
    run: u32,
    last_dst: String,
    error: Option<Error>,
}

impl<'a> Interning<'a> {
    fn new(shards: &'a [Mutex<Shard>]) -> Self {
        Interning {
            shards,
            pending: (0..SHARDS).map(|_| Pending::default()).collect(),
            last_src: String::new(),
            run: 0,
            last_dst: String::new(),
            error: None,
        }
    }

    fn edge(&mut self, src: &str, dst: &str) {
        if self.error.is_some() {
            return;
        }
        if self.run == 0 || src != self.last_src {
            self.end_run();
            self.last_src.clear();
            self.last_src.push_str(src);
        }
        self.run += 1;
        if dst != self.last_dst || self.last_dst.is_empty() {
            self.push(dst, 0);
            self.last_dst.clear();
            self.last_dst.push_str(dst);
        }
    }

    /// A URL that is a node by itself (no out-links counted).
    fn node(&mut self, url: &str) {
        if self.error.is_none() {
            self.push(url, 0);
        }
    }

    fn end_run(&mut self) {
        if self.run > 0 {
            let src = std::mem::take(&mut self.last_src);
            self.push(&src, self.run);
            self.last_src = src;
            self.run = 0;
        }
    }

    fn push(&mut self, url: &str, out_links: u32) {
        let h = url_hash(url);
        let s = shard_of(h);
        let p = &mut self.pending[s];
        let start = p.bytes.len() as u32;
        p.bytes.push_str(url);
        p.items.push((h, start, p.bytes.len() as u32, out_links));
        if p.items.len() >= PENDING
            && let Err(e) = self.flush(s)
        {
            self.error = Some(e);
        }
    }

    fn flush(&mut self, s: usize) -> Result<()> {
        let p = &mut self.pending[s];
        if p.items.is_empty() {
            return Ok(());
        }
        let mut shard = self.shards[s].lock().unwrap_or_else(|e| e.into_inner());
        for &(h, a, b, n) in &p.items {
            shard.intern(h, &p.bytes[a as usize..b as usize], n)?;
        }
        p.items.clear();
        p.bytes.clear();
        Ok(())
    }

    /// Inserts everything still buffered.
    fn finish(mut self) -> Result<()> {
        self.end_run();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for s in 0..SHARDS {
            self.flush(s)?;
        }
        Ok(())
    }
}

/// Edges a second-pass worker resolves to ids a batch at a time: the URLs are
/// looked up shard by shard, so that the lookups of a batch stay within a few
/// shards' memory instead of jumping across the whole table.
#[derive(Default)]
struct EdgeBuffer {
    /// Distinct consecutive URLs: `(hash, start, end)` in `bytes`.
    urls: Vec<(u64, u32, u32)>,
    bytes: String,
    /// `(source, target)` as indices into `urls`.
    edges: Vec<(u32, u32)>,
    last_src: Option<u32>,
    last_dst: Option<u32>,
    /// Scratch: `urls` indices grouped by shard, and their resolved ids.
    by_shard: Vec<u32>,
    ids: Vec<u32>,
    run: Vec<u32>,
}

/// Edges per second-pass batch.
const EDGE_BATCH: usize = 1 << 16;

impl EdgeBuffer {
    fn url(&self, i: u32) -> &str {
        let (_, a, b) = self.urls[i as usize];
        &self.bytes[a as usize..b as usize]
    }

    fn item(&mut self, url: &str, last: Option<u32>) -> u32 {
        if let Some(i) = last
            && self.url(i) == url
        {
            return i;
        }
        let a = self.bytes.len() as u32;
        self.bytes.push_str(url);
        self.urls.push((url_hash(url), a, self.bytes.len() as u32));
        (self.urls.len() - 1) as u32
    }

    fn edge(&mut self, src: &str, dst: &str) {
        let s = self.item(src, self.last_src);
        self.last_src = Some(s);
        let d = self.item(dst, self.last_dst);
        self.last_dst = Some(d);
        self.edges.push((s, d));
    }
}

/// The shared state of the second pass.
struct Fill<'a> {
    shards: &'a [Shard],
    order: &'a [u32],
    offsets: &'a [u64],
    cursor: &'a [AtomicU64],
    slots: &'a [AtomicU32],
}

impl Fill<'_> {
    /// Resolves the buffered edges and writes them into their sources' slots.
    fn flush(&self, w: &mut EdgeBuffer) -> Result<()> {
        // Counting sort of the URLs by shard, then lookups shard by shard.
        let mut starts = [0usize; SHARDS + 1];
        for &(h, _, _) in &w.urls {
            starts[shard_of(h) + 1] += 1;
        }
        for k in 0..SHARDS {
            starts[k + 1] += starts[k];
        }
        w.by_shard.clear();
        w.by_shard.resize(w.urls.len(), 0);
        for (i, &(h, _, _)) in w.urls.iter().enumerate() {
            let k = shard_of(h);
            w.by_shard[starts[k]] = i as u32;
            starts[k] += 1;
        }
        w.ids.clear();
        w.ids.resize(w.urls.len(), 0);
        for &i in &w.by_shard {
            let (h, a, b) = w.urls[i as usize];
            let url = &w.bytes[a as usize..b as usize];
            let shards = self.shards;
            let found = shards[shard_of(h)].find(h, |id| {
                let (s, l) = split_temp(self.order[id as usize]);
                shards[s].url(l) == url
            });
            match found {
                Some(id) => w.ids[i as usize] = id,
                None => {
                    return Err(changed(format_args!(
                        "URL {url:?} was not seen by the first pass"
                    )));
                }
            }
        }
        // Runs of edges with the same source take their slots at once.
        let mut k = 0;
        while k < w.edges.len() {
            let src = w.edges[k].0;
            w.run.clear();
            while k < w.edges.len() && w.edges[k].0 == src {
                w.run.push(w.ids[w.edges[k].1 as usize]);
                k += 1;
            }
            self.write_run(w.ids[src as usize], &w.run)?;
        }
        w.urls.clear();
        w.bytes.clear();
        w.edges.clear();
        w.last_src = None;
        w.last_dst = None;
        Ok(())
    }

    fn write_run(&self, src: u32, run: &[u32]) -> Result<()> {
        let s = src as usize;
        let start = self.cursor[s].fetch_add(run.len() as u64, Ordering::Relaxed);
        if start + run.len() as u64 > self.offsets[s + 1] {
            return Err(changed("more links than the first pass counted"));
        }
        for (k, &d) in run.iter().enumerate() {
            self.slots[start as usize + k].store(d, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// The final id of `url`, given the shards (remapped) and the node order.
fn lookup(shards: &[Shard], order: &[u32], url: &str) -> Option<u32> {
    let h = url_hash(url);
    shards[shard_of(h)].find(h, |id| {
        let (s, l) = split_temp(order[id as usize]);
        shards[s].url(l) == url
    })
}

/// The page graph: URLs by id, partition boundaries, and the out-link CSR.
#[derive(Debug)]
pub struct PageGraph {
    shards: Vec<Shard>,
    /// Temporary (shard, local) id of each node, by final id.
    order: Vec<u32>,
    part_offsets: Vec<usize>,
    /// How the nodes are partitioned (the crawl's partitioner).
    pt: Partitioner,
    /// Out-links (node -> distinct targets, ascending).
    pub out: Csr,
}

impl PageGraph {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.order.len()
    }

    /// The URL of node `id`.
    pub fn url(&self, id: usize) -> &str {
        let (s, l) = split_temp(self.order[id]);
        self.shards[s].url(l)
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        self.part_offsets.len() - 1
    }

    /// How the nodes are partitioned (count and key).
    pub fn partitioner(&self) -> Partitioner {
        self.pt
    }

    /// The ids of partition `p`, whose URLs are ascending.
    pub fn partition(&self, p: usize) -> Range<usize> {
        self.part_offsets[p]..self.part_offsets[p + 1]
    }

    /// The id of `url` (a hash table lookup).
    pub fn id_of(&self, url: &str) -> Option<usize> {
        lookup(&self.shards, &self.order, url).map(|id| id as usize)
    }

    /// Builds a graph from an explicit edge list (tests, benchmarks).
    pub fn from_edges(edges: &[(&str, &str)], partitions: usize) -> Result<PageGraph> {
        build(
            1,
            |_, f| {
                for (s, d) in edges {
                    f(s, d);
                }
                Ok(())
            },
            Partitioner::by_host(partitions),
        )
    }

    /// Builds a graph from an explicit edge list plus URLs that are nodes without
    /// any link needed (tests).
    pub fn from_edges_and_nodes(
        edges: &[(&str, &str)],
        nodes: &[&str],
        partitions: usize,
    ) -> Result<PageGraph> {
        build_with_nodes(
            1,
            |_, f| {
                for (s, d) in edges {
                    f(s, d);
                }
                Ok(())
            },
            1,
            |_, f| {
                for u in nodes {
                    f(u);
                }
                Ok(())
            },
            Partitioner::by_host(partitions),
        )
    }

    /// Bytes held by the URL table and the out-link CSR (the graph's memory).
    pub fn heap_bytes(&self) -> usize {
        self.out.heap_bytes()
            + self.order.capacity() * 4
            + self.shards.iter().map(Shard::heap_bytes).sum::<usize>()
    }
}

/// The host of a URL, cheaply: normalized URLs have a lowercase host between `://`
/// and the first `/`, `?` or `#`; anything unusual (user info, IPv6, uppercase)
/// goes through the full parser ([`host_of`]).
pub fn url_host(url: &str) -> Cow<'_, str> {
    if let Some(i) = url.find("://") {
        let rest = &url[i + 3..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let auth = &rest[..end];
        if !auth.is_empty()
            && auth
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.:_".contains(&b))
        {
            let host = auth.split(':').next().unwrap_or(auth);
            return Cow::Borrowed(host);
        }
    }
    Cow::Owned(host_of(url))
}

/// Builds the page graph of `source`, its URLs partitioned by `pt`.
/// Its nodes are the ends of every edge and the URLs of the source's node files
/// (the crawldb: every known page is a node, linked or not).
pub fn build_graph(source: &EdgeSource, pt: Partitioner) -> Result<PageGraph> {
    let files = source.files();
    let node_files = source.node_files();
    build_with_nodes(
        files.len(),
        |i, f| source.scan_file(&files[i], f),
        node_files.len(),
        |i, f| source.scan_nodes(&node_files[i], f),
        pt,
    )
}

/// The error when the second pass does not see what the first saw.
fn changed(what: impl std::fmt::Display) -> Error {
    Error::input(
        "graph",
        format!(
            "{what}: an edge file changed while the graph was built (was another stage writing it?); rerun"
        ),
    )
}

/// The two-pass build over `jobs` scan jobs (files); `scan(i, f)` calls `f(source,
/// target)` for every edge of job `i` and must give the same edges both times.
fn build<S>(jobs: usize, scan: S, partitions: Partitioner) -> Result<PageGraph>
where
    S: Fn(usize, &mut dyn FnMut(&str, &str)) -> Result<()> + Sync,
{
    build_with_nodes(jobs, scan, 0, |_, _| Ok(()), partitions)
}

/// [`build`] with `node_jobs` more scan jobs: `scan_nodes(i, f)` calls `f(url)` for
/// URLs that are nodes whether or not they have links (read in the first pass only).
///
/// The phases, each its own function: pass 1 interns every URL and counts its
/// out-links ([`intern_urls`]); ids are assigned by (host partition, URL)
/// ([`order_by_partition`], [`assign_ids`]); pass 2 fills each source's slots with
/// its targets' ids ([`fill_edges`]); every list is sorted, deduplicated and the
/// CSR compacted ([`dedup_lists`]).
fn build_with_nodes<S, N>(
    jobs: usize,
    scan: S,
    node_jobs: usize,
    scan_nodes: N,
    pt: Partitioner,
) -> Result<PageGraph>
where
    S: Fn(usize, &mut dyn FnMut(&str, &str)) -> Result<()> + Sync,
    N: Fn(usize, &mut dyn FnMut(&str)) -> Result<()> + Sync,
{
    let t0 = std::time::Instant::now();
    let mut shards = intern_urls(jobs, &scan, node_jobs, &scan_nodes)?;
    let n: usize = shards.iter().map(Shard::len).sum();
    log_phase(t0, &format!("pass 1 (URL table, {n} URLs)"));
    let (order, part_offsets) = order_by_partition(&shards, pt);
    let offsets = assign_ids(&mut shards, &order);
    log_phase(t0, "ids");
    let targets = fill_edges(jobs, &scan, &shards, &order, &offsets)?;
    log_phase(t0, "pass 2 (edges)");
    let (offsets, targets) = dedup_lists(offsets, targets);
    log_phase(t0, "dedup");
    Ok(PageGraph {
        shards,
        order,
        part_offsets,
        pt,
        out: Csr::from_parts(offsets, targets),
    })
}

/// A debug line after a phase of the build: elapsed and CPU seconds, peak RSS.
fn log_phase(t0: std::time::Instant, phase: &str) {
    tracing::debug!(
        "graph build: {phase} {:.2}s, cpu {:.2}s, peak RSS {} MiB",
        t0.elapsed().as_secs_f64(),
        cpu_secs(),
        super::mem::peak_rss_bytes().unwrap_or(0) >> 20
    );
}

/// Pass 1: the URL table (sharded, interned) and every URL's out-link count.
fn intern_urls<S, N>(jobs: usize, scan: &S, node_jobs: usize, scan_nodes: &N) -> Result<Vec<Shard>>
where
    S: Fn(usize, &mut dyn FnMut(&str, &str)) -> Result<()> + Sync,
    N: Fn(usize, &mut dyn FnMut(&str)) -> Result<()> + Sync,
{
    let locked: Vec<Mutex<Shard>> = (0..SHARDS).map(|_| Mutex::default()).collect();
    (0..jobs + node_jobs).into_par_iter().try_for_each(|i| {
        let mut w = Interning::new(&locked);
        if i < jobs {
            scan(i, &mut |s, d| w.edge(s, d))?;
        } else {
            scan_nodes(i - jobs, &mut |u| w.node(u))?;
        }
        w.finish()
    })?;
    let mut shards: Vec<Shard> = locked
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    shards.par_iter_mut().for_each(|s| {
        s.arena.shrink_to_fit();
        s.starts.shrink_to_fit();
        s.counts.shrink_to_fit();
    });
    let n: usize = shards.iter().map(Shard::len).sum();
    if n >= u32::MAX as usize {
        return Err(Error::input(
            "graph",
            "more than 4 billion distinct URLs: beyond u32 ids",
        ));
    }
    Ok(shards)
}

/// The temporary ids of every URL in final id order, by (host partition, URL), and
/// where each partition starts in that order.
fn order_by_partition(shards: &[Shard], pt: Partitioner) -> (Vec<u32>, Vec<usize>) {
    let partitions = pt.n();
    let n: usize = shards.iter().map(Shard::len).sum();
    let parts_of: Vec<Vec<u32>> = shards
        .par_iter()
        .map(|s| {
            let mut cache: FxHashMap<&str, u32> = FxHashMap::default();
            (0..s.len())
                .map(|l| {
                    let host = url_host(s.url(l));
                    if let Some(&p) = cache.get(host.as_ref()) {
                        return p;
                    }
                    let p = pt.of_host(&host) as u32;
                    if let Cow::Borrowed(h) = host {
                        cache.insert(h, p);
                    }
                    p
                })
                .collect()
        })
        .collect();
    let mut part_offsets = vec![0usize; partitions + 1];
    for ps in &parts_of {
        for &p in ps {
            part_offsets[p as usize + 1] += 1;
        }
    }
    for p in 0..partitions {
        part_offsets[p + 1] += part_offsets[p];
    }
    let mut order = vec![0u32; n];
    let mut next = part_offsets.clone();
    for (s, ps) in parts_of.iter().enumerate() {
        for (l, &p) in ps.iter().enumerate() {
            order[next[p as usize]] = temp_id(s, l as u32);
            next[p as usize] += 1;
        }
    }
    drop(parts_of);
    let url_of = |t: &u32| {
        let (s, l) = split_temp(*t);
        shards[s].url(l)
    };
    let mut slices: Vec<&mut [u32]> = Vec::with_capacity(partitions);
    let mut rest = order.as_mut_slice();
    for p in 0..partitions {
        let (a, b) = rest.split_at_mut(part_offsets[p + 1] - part_offsets[p]);
        slices.push(a);
        rest = b;
    }
    if partitions >= 2 * rayon::current_num_threads() {
        slices
            .into_par_iter()
            .for_each(|s| s.sort_unstable_by(|a, b| url_of(a).cmp(url_of(b))));
    } else {
        for s in slices {
            s.par_sort_unstable_by(|a, b| url_of(a).cmp(url_of(b)));
        }
    }
    (order, part_offsets)
}

/// The CSR offsets from the out-link counts (in final id order); then every shard's
/// table maps to final ids.
fn assign_ids(shards: &mut [Shard], order: &[u32]) -> Vec<u64> {
    let n = order.len();
    let mut offsets = vec![0u64; n + 1];
    for (id, &t) in order.iter().enumerate() {
        let (s, l) = split_temp(t);
        offsets[id + 1] = offsets[id] + u64::from(shards[s].counts[l]);
    }
    for (id, &t) in order.iter().enumerate() {
        let (s, l) = split_temp(t);
        shards[s].counts[l] = id as u32;
    }
    shards.par_iter_mut().for_each(|s| {
        let perm = std::mem::take(&mut s.counts);
        s.remap(&perm);
    });
    offsets
}

/// Pass 2: fills each source's slots with its targets' ids; fails when the scan
/// gives fewer links than pass 1 counted (the input changed in between).
fn fill_edges<S>(
    jobs: usize,
    scan: &S,
    shards: &[Shard],
    order: &[u32],
    offsets: &[u64],
) -> Result<Vec<u32>>
where
    S: Fn(usize, &mut dyn FnMut(&str, &str)) -> Result<()> + Sync,
{
    let n = order.len();
    let m = offsets[n] as usize;
    let cursor: Vec<AtomicU64> = offsets[..n].iter().map(|&o| AtomicU64::new(o)).collect();
    let slots: Vec<AtomicU32> = (0..m).map(|_| AtomicU32::new(0)).collect();
    let fill = Fill {
        shards,
        order,
        offsets,
        cursor: &cursor,
        slots: &slots,
    };
    (0..jobs).into_par_iter().try_for_each(|i| -> Result<()> {
        let mut w = EdgeBuffer::default();
        let mut err: Option<Error> = None;
        scan(i, &mut |s, d| {
            if err.is_none() {
                w.edge(s, d);
                if w.edges.len() >= EDGE_BATCH
                    && let Err(e) = fill.flush(&mut w)
                {
                    err = Some(e);
                }
            }
        })?;
        match err {
            Some(e) => Err(e),
            None => fill.flush(&mut w),
        }
    })?;
    let complete = (0..n)
        .into_par_iter()
        .all(|s| cursor[s].load(Ordering::Relaxed) == offsets[s + 1]);
    if !complete {
        return Err(changed("fewer links than the first pass counted"));
    }
    drop(cursor);
    Ok(slots.into_iter().map(AtomicU32::into_inner).collect())
}

/// Sorts and deduplicates every adjacency list in parallel, then compacts the CSR.
fn dedup_lists(mut offsets: Vec<u64>, mut targets: Vec<u32>) -> (Vec<u64>, Vec<u32>) {
    let n = offsets.len() - 1;
    let mut degrees = vec![0u32; n];
    {
        let mut work: Vec<(usize, &mut [u32], &mut [u32])> = Vec::new();
        let mut rest_t = targets.as_mut_slice();
        let mut rest_d = degrees.as_mut_slice();
        let mut v = 0;
        while v < n {
            let hi = (v + CHUNK).min(n);
            let len = (offsets[hi] - offsets[v]) as usize;
            let (t, tr) = rest_t.split_at_mut(len);
            let (d, dr) = rest_d.split_at_mut(hi - v);
            work.push((v, t, d));
            rest_t = tr;
            rest_d = dr;
            v = hi;
        }
        let offsets = &offsets;
        work.into_par_iter().for_each(|(v0, t, d)| {
            let base = offsets[v0];
            for (i, deg) in d.iter_mut().enumerate() {
                let v = v0 + i;
                let lo = (offsets[v] - base) as usize;
                let hi = (offsets[v + 1] - base) as usize;
                let list = &mut t[lo..hi];
                list.sort_unstable();
                let mut k = 0;
                for j in 0..list.len() {
                    if j == 0 || list[j] != list[k - 1] {
                        list[k] = list[j];
                        k += 1;
                    }
                }
                *deg = k as u32;
            }
        });
    }
    let mut w = 0usize;
    for v in 0..n {
        let lo = offsets[v] as usize;
        let k = degrees[v] as usize;
        if w != lo {
            targets.copy_within(lo..lo + k, w);
        }
        offsets[v] = w as u64;
        w += k;
    }
    offsets[n] = w as u64;
    drop(degrees);
    targets.truncate(w);
    targets.shrink_to_fit();
    (offsets, targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(url_host("http://a.test/x"), "a.test");
        assert_eq!(url_host("https://a.test:8080?q"), "a.test");
        assert_eq!(url_host("http://u@B.test/"), "b.test");
    }

    #[test]
    fn node_urls_join_the_graph_once_without_links() {
        let g = PageGraph::from_edges_and_nodes(
            &[
                ("http://a.test/", "http://b.test/"),
                ("http://b.test/", "http://a.test/"),
            ],
            &[
                "http://a.test/",
                "http://lonely.test/",
                "http://lonely.test/",
            ],
            3,
        )
        .unwrap();
        assert_eq!(g.nodes(), 3);
        assert_eq!(g.out.edges(), 2);
        let lonely = g.id_of("http://lonely.test/").unwrap();
        assert_eq!(g.out.degree(lonely), 0);
        assert_eq!(g.out.degree(g.id_of("http://a.test/").unwrap()), 1);
        for p in 0..3 {
            for id in g.partition(p) {
                assert_eq!(Partitioner::by_host(3).of_host(&url_host(g.url(id))), p);
            }
        }
    }

    #[test]
    fn ids_follow_partition_then_url_order() {
        let g = PageGraph::from_edges(
            &[
                ("http://a.test/1", "http://b.test/"),
                ("http://a.test/1", "http://b.test/"),
                ("http://b.test/", "http://a.test/0"),
                ("http://c.test/", "http://c.test/"),
            ],
            3,
        )
        .unwrap();
        assert_eq!(g.nodes(), 4);
        assert_eq!(g.out.edges(), 3);
        for p in 0..3 {
            let r = g.partition(p);
            for id in r.clone() {
                assert_eq!(Partitioner::by_host(3).of_host(&url_host(g.url(id))), p);
                if id > r.start {
                    assert!(g.url(id - 1) < g.url(id));
                }
            }
        }
        let a1 = g.id_of("http://a.test/1").unwrap();
        let b = g.id_of("http://b.test/").unwrap();
        let c = g.id_of("http://c.test/").unwrap();
        assert_eq!(g.out.neighbours(a1), &[b as u32]);
        assert_eq!(g.out.neighbours(c), &[c as u32]);
        assert_eq!(g.id_of("http://nope.test/"), None);
    }

    #[test]
    fn hash_collisions_fall_back_to_comparing_urls() {
        // Two different URLs forced onto the same hash: both are kept, the shard
        // is marked, and lookups tell them apart by their bytes.
        let mut shard = Shard::default();
        shard.intern(42, "http://a.test/", 2).unwrap();
        shard.intern(42, "http://b.test/", 1).unwrap();
        shard.intern(42, "http://a.test/", 1).unwrap();
        assert!(shard.collided);
        assert_eq!(shard.len(), 2);
        assert_eq!(shard.counts, vec![3, 1]);
        shard.remap(&[0, 1]);
        let is = |url: &str| {
            let shard = &shard;
            shard.find(42, |id| shard.url(id as usize) == url)
        };
        assert_eq!(is("http://a.test/"), Some(0));
        assert_eq!(is("http://b.test/"), Some(1));
        assert_eq!(is("http://c.test/"), None);
    }

    #[test]
    fn parallel_jobs_build_the_same_graph_as_a_naive_one() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let url = |i: u64| format!("http://h{}.test/p{}", i % 37, i);
        let edges: Vec<(String, String)> = (0..20_000)
            .map(|_| (url(rnd() % 3000), url((rnd() % 3000).pow(2) / 3000)))
            .collect();
        let jobs = 7;
        let g = build(
            jobs,
            |j, f| {
                for (s, d) in edges.iter().skip(j).step_by(jobs) {
                    f(s, d);
                }
                Ok(())
            },
            Partitioner::by_host(5),
        )
        .unwrap();
        let mut want: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
            Default::default();
        for (s, d) in &edges {
            want.entry(s).or_default().insert(d);
            want.entry(d).or_default();
        }
        assert_eq!(g.nodes(), want.len());
        assert_eq!(g.out.edges(), want.values().map(|t| t.len()).sum::<usize>());
        for (u, targets) in &want {
            let id = g.id_of(u).unwrap();
            assert_eq!(g.url(id), *u);
            let got: Vec<&str> = g
                .out
                .neighbours(id)
                .iter()
                .map(|&t| g.url(t as usize))
                .collect();
            let mut got_sorted = got.clone();
            got_sorted.sort_unstable();
            assert_eq!(got_sorted, targets.iter().copied().collect::<Vec<_>>());
            assert!(g.out.neighbours(id).windows(2).all(|w| w[0] < w[1]));
        }
        for p in 0..g.partitions() {
            let r = g.partition(p);
            for id in r.clone().skip(1) {
                assert!(g.url(id - 1) < g.url(id));
            }
            for id in r {
                assert_eq!(Partitioner::by_host(5).of_host(&url_host(g.url(id))), p);
            }
        }
    }
}
