//! External sort of updatedb's segment rows: bounded memory whatever the segment size.
//!
//! Rows are buffered up to a row budget (`updatedb.sort_buffer_rows`); a full buffer
//! is sorted (stably) and spilled as one run, a bincode file in the crawldb's staged
//! version directory (so an interrupted run's cleanup removes it). [`Sorter::finish`]
//! then yields every row in sort order: straight from memory when nothing was
//! spilled (no file is written), else by a k-way merge of the runs. When there are
//! more runs than [`MAX_FAN_IN`], consecutive groups of runs are first merged into
//! longer runs (as often as needed), so open files and read buffers stay bounded
//! whatever the segment size. Ties between runs go to the earlier run, so the result
//! is exactly that of one stable sort of all rows in push order. Run files are
//! deleted when the sorter or the merge is dropped, and each input run as soon as
//! its group is merged.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::crawldb::merge::Keyed;
use crate::error::{Error, Result};
use crate::records::FetchRecord;

/// The order in which updatedb needs a kind of segment row.
pub trait SortKey {
    /// Compares two rows.
    fn cmp_key(&self, other: &Self) -> Ordering;
}

impl SortKey for FetchRecord {
    /// By URL, then fetch time.
    fn cmp_key(&self, other: &Self) -> Ordering {
        self.url
            .cmp(&other.url)
            .then(self.fetch_time.cmp(&other.fetch_time))
    }
}

impl SortKey for Keyed {
    /// By URL.
    fn cmp_key(&self, other: &Self) -> Ordering {
        self.url.cmp(&other.url)
    }
}

/// Most runs merged at once (open files, 64 KiB read buffer each).
pub const MAX_FAN_IN: usize = 64;

/// A spilled run: its file (removed on drop) and row count.
struct RunFile {
    path: PathBuf,
    rows: usize,
}

impl Drop for RunFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn spill_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::crawl_dir(
        path,
        format!("sorted run spilled to disk: {e}; check free disk space and rerun the stage"),
    )
}

/// Buffers rows, spilling sorted runs to disk when asked.
pub struct Sorter<T> {
    buf: Vec<T>,
    runs: Vec<RunFile>,
    dir: PathBuf,
    name: String,
    fan_in: usize,
    /// Files written so far (spilled and merged runs), for unique names.
    files: usize,
    /// Bytes of the runs spilled from memory (not counting merge passes).
    spilled: u64,
}

impl<T: SortKey + Serialize + DeserializeOwned> Sorter<T> {
    /// A sorter whose runs are files `<dir>/<name>-<n>.spill`.
    pub fn new(dir: &Path, name: &str) -> Self {
        Sorter {
            buf: Vec::new(),
            runs: Vec::new(),
            dir: dir.to_path_buf(),
            name: name.to_string(),
            fan_in: MAX_FAN_IN,
            files: 0,
            spilled: 0,
        }
    }

    /// Merges at most `fan_in` runs at once (at least 2; [`MAX_FAN_IN`] by default).
    pub fn with_fan_in(mut self, fan_in: usize) -> Self {
        self.fan_in = fan_in.max(2);
        self
    }

    /// A new run file's path.
    fn next_path(&mut self) -> PathBuf {
        let path = self.dir.join(format!("{}-{}.spill", self.name, self.files));
        self.files += 1;
        path
    }

    /// Buffers a row.
    pub fn push(&mut self, row: T) {
        self.buf.push(row);
    }

    /// Rows buffered in memory.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Runs spilled so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Sorts the buffer and writes it as one run (nothing when it is empty).
    pub fn spill(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.buf.sort_by(T::cmp_key);
        let path = self.next_path();
        let rows = std::mem::take(&mut self.buf);
        let run = write_run(path, rows.into_iter().map(Ok))?;
        self.spilled += std::fs::metadata(&run.path).map_or(0, |m| m.len());
        self.runs.push(run);
        Ok(())
    }

    /// Bytes of the runs spilled from memory so far.
    pub fn spilled_bytes(&self) -> u64 {
        self.spilled
    }

    /// Every row in sort order.
    pub fn finish(mut self) -> Result<Sorted<T>> {
        if self.runs.is_empty() {
            let mut buf = std::mem::take(&mut self.buf);
            buf.sort_by(T::cmp_key);
            return Ok(Sorted(Inner::Memory(buf.into_iter())));
        }
        self.spill()?;
        // Merge passes: consecutive groups, in order, so ties still go to the run
        // pushed first.
        while self.runs.len() > self.fan_in {
            let runs = std::mem::take(&mut self.runs);
            let mut groups = Vec::new();
            let mut it = runs.into_iter().peekable();
            while it.peek().is_some() {
                groups.push(it.by_ref().take(self.fan_in).collect::<Vec<_>>());
            }
            for group in groups {
                let merged = if group.len() == 1 {
                    group.into_iter().next()
                } else {
                    let path = self.next_path();
                    Some(write_run(path, merge::<T>(group)?)?)
                };
                self.runs.extend(merged);
            }
        }
        merge(std::mem::take(&mut self.runs))
    }
}

/// Writes sorted rows as a run file (removed again if writing fails).
fn write_run<T: Serialize>(
    path: PathBuf,
    rows: impl Iterator<Item = Result<T>>,
) -> Result<RunFile> {
    let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
    // Owned before writing, so a failed write is removed too.
    let mut run = RunFile {
        path: path.clone(),
        rows: 0,
    };
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let cfg = bincode::config::standard();
    for row in rows {
        bincode::serde::encode_into_std_write(&row?, &mut w, cfg)
            .map_err(|e| spill_err(&path, e))?;
        run.rows += 1;
    }
    w.flush().map_err(|e| Error::io(&path, e))?;
    Ok(run)
}

/// The k-way merge of `runs` (ties to the earlier run).
fn merge<T: SortKey + DeserializeOwned>(runs: Vec<RunFile>) -> Result<Sorted<T>> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (run, file) in runs.into_iter().enumerate() {
        let f = File::open(&file.path).map_err(|e| Error::io(&file.path, e))?;
        let mut reader = RunReader {
            input: BufReader::with_capacity(1 << 16, f),
            left: file.rows,
            file,
            _row: PhantomData,
        };
        if let Some(row) = reader.next_row()? {
            heap.push(HeapItem { row, run });
        }
        readers.push(reader);
    }
    Ok(Sorted(Inner::Merge { readers, heap }))
}

struct RunReader<T> {
    input: BufReader<File>,
    left: usize,
    file: RunFile,
    _row: PhantomData<T>,
}

impl<T: DeserializeOwned> RunReader<T> {
    fn next_row(&mut self) -> Result<Option<T>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        bincode::serde::decode_from_std_read(&mut self.input, bincode::config::standard())
            .map(Some)
            .map_err(|e| spill_err(&self.file.path, e))
    }
}

struct HeapItem<T> {
    row: T,
    run: usize,
}

impl<T: SortKey> Ord for HeapItem<T> {
    /// Reversed (`BinaryHeap` is a max-heap): the smallest row, then the earliest run, on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.row.cmp_key(&self.row).then(other.run.cmp(&self.run))
    }
}

impl<T: SortKey> PartialOrd for HeapItem<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: SortKey> PartialEq for HeapItem<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T: SortKey> Eq for HeapItem<T> {}

/// The rows of a [`Sorter`], in sort order (an iterator of `Result<T>`).
pub struct Sorted<T>(Inner<T>);

enum Inner<T> {
    /// Nothing was spilled.
    Memory(std::vec::IntoIter<T>),
    /// A k-way merge of spilled runs: one reader per run (its file is removed when
    /// dropped) and the head row of each unfinished run.
    Merge {
        readers: Vec<RunReader<T>>,
        heap: BinaryHeap<HeapItem<T>>,
    },
}

impl<T: SortKey + DeserializeOwned> Iterator for Sorted<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        match &mut self.0 {
            Inner::Memory(rows) => rows.next().map(Ok),
            Inner::Merge { readers, heap } => {
                let HeapItem { row, run } = heap.pop()?;
                match readers[run].next_row() {
                    Ok(Some(next)) => heap.push(HeapItem { row: next, run }),
                    Ok(None) => {}
                    Err(e) => {
                        heap.clear();
                        return Some(Err(e));
                    }
                }
                Some(Ok(row))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawldb::merge::SegRow;

    fn keyed(url: &str, sig: usize) -> Keyed {
        Keyed {
            url: url.into(),
            host: "h.test".into(),
            row: SegRow::Sig(sig.to_string()),
        }
    }

    fn spill_files(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    #[test]
    fn spilled_runs_merge_like_one_stable_sort_and_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let urls = ["c", "a", "b", "a", "c", "b", "a", "d", "c", "a"];
        let rows: Vec<Keyed> = urls.iter().enumerate().map(|(i, u)| keyed(u, i)).collect();
        let mut expected = rows.clone();
        expected.sort_by(Keyed::cmp_key);
        let order = |v: &[Keyed]| {
            v.iter()
                .map(|k| match &k.row {
                    SegRow::Sig(s) => format!("{}{s}", k.url),
                    other => panic!("only signature rows were pushed, got {other:?}"),
                })
                .collect::<Vec<_>>()
        };

        let mut s = Sorter::new(tmp.path(), "t");
        for (i, r) in rows.iter().cloned().enumerate() {
            s.push(r);
            if i % 3 == 2 {
                s.spill().unwrap();
            }
        }
        assert_eq!(s.runs(), 3);
        assert_eq!(spill_files(tmp.path()), 3);
        let merged = s.finish().unwrap();
        assert_eq!(spill_files(tmp.path()), 4);
        let merged: Vec<Keyed> = merged.collect::<Result<_>>().unwrap();
        assert_eq!(order(&merged), order(&expected));
        assert_eq!(spill_files(tmp.path()), 0);

        // More runs than the fan-in: merged in passes, still one stable sort.
        let many: Vec<Keyed> = (0..200)
            .map(|i| keyed(&format!("u{:03}", (i * 37) % 101), i))
            .collect();
        let mut want = many.clone();
        want.sort_by(Keyed::cmp_key);
        let mut s = Sorter::new(tmp.path(), "f").with_fan_in(3);
        for (i, r) in many.iter().cloned().enumerate() {
            s.push(r);
            if i % 7 == 6 {
                s.spill().unwrap();
            }
        }
        assert_eq!(s.runs(), 28);
        let merged = s.finish().unwrap();
        assert!(
            spill_files(tmp.path()) <= 3,
            "inputs removed as they are merged"
        );
        let merged: Vec<Keyed> = merged.collect::<Result<_>>().unwrap();
        assert_eq!(order(&merged), order(&want));
        assert_eq!(spill_files(tmp.path()), 0);

        // Nothing spilled: no file at all.
        let mut s = Sorter::new(tmp.path(), "m");
        rows.iter().cloned().for_each(|r| s.push(r));
        let sorted: Vec<Keyed> = s.finish().unwrap().collect::<Result<_>>().unwrap();
        assert_eq!(order(&sorted), order(&expected));
        assert_eq!(spill_files(tmp.path()), 0);

        // Dropped half way: the files go too.
        let mut s = Sorter::new(tmp.path(), "d");
        rows.iter().cloned().for_each(|r| s.push(r));
        s.spill().unwrap();
        s.push(keyed("e", 0));
        let mut it = s.finish().unwrap();
        assert!(it.next().is_some());
        assert_eq!(spill_files(tmp.path()), 2);
        drop(it);
        assert_eq!(spill_files(tmp.path()), 0);
    }
}
