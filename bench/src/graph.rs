//! A synthetic web graph for the `graphbench` benchmark: `pages` pages on
//! `pages / 50` hosts, about `links` distinct-ish links with a skewed (power-law
//! like) in-degree, written as linkdb-like Parquet rows.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use trawl::error::Result;
use trawl::records::InlinkRecord;
use trawl::store::parquet::{self, PartWriter};

/// Pages per host in the synthetic graph.
pub const PAGES_PER_HOST: u64 = 50;

/// The URL of synthetic page `i`.
pub fn page_url(i: u64) -> String {
    format!("http://h{}.bench.test/p/{i}", i / PAGES_PER_HOST)
}

/// A small, fast, deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Writes the synthetic graph into `files` Parquet files under `dir` (rows
/// `url` = target, `from_url` = source); returns the files and the rows written.
/// Out-degrees are uniform in `[1, 2 * links / pages - 1]`; a target is page
/// `pages * u^2.5` (u uniform) scattered by a bijective multiplicative hash, so a
/// few pages get a large share of the in-links.
pub fn write_synthetic(
    dir: &Path,
    pages: u64,
    links: u64,
    files: usize,
) -> Result<(Vec<PathBuf>, u64)> {
    std::fs::create_dir_all(dir).map_err(|e| trawl::error::Error::io(dir, e))?;
    let avg = (links as f64 / pages.max(1) as f64).max(1.0);
    let per_file = pages.div_ceil(files.max(1) as u64);
    let results: Vec<Result<(PathBuf, u64)>> = (0..files)
        .into_par_iter()
        .map(|f| {
            let path = dir.join(parquet::part_name(f));
            let mut w = PartWriter::<InlinkRecord>::create(&path)?;
            let mut rng =
                Rng(0x9e37_79b9_7f4a_7c15 ^ (f as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9));
            let lo = f as u64 * per_file;
            let hi = ((f as u64 + 1) * per_file).min(pages);
            for src in lo..hi {
                let from = page_url(src);
                let deg = 1 + (rng.unit() * (2.0 * avg - 1.0)) as u64;
                for _ in 0..deg {
                    let t = (pages as f64 * rng.unit().powf(2.5)) as u64 % pages;
                    let t = (t.wrapping_mul(2_654_435_761)) % pages;
                    w.push(InlinkRecord {
                        url: page_url(t),
                        from_url: from.clone(),
                        anchor: String::new(),
                        segment: "bench".into(),
                    })?;
                }
            }
            let n = w.finish()?;
            Ok((path, n))
        })
        .collect();
    let mut out = Vec::new();
    let mut rows = 0;
    for r in results {
        let (p, n) = r?;
        out.push(p);
        rows += n;
    }
    Ok((out, rows))
}
