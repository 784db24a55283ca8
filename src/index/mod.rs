//! The search index: what trawl crawls becomes searchable (docs/search.md).
//!
//! An embedded [tantivy](https://docs.rs/tantivy) index in the crawl's `index/`
//! directory, one document per page ([`schema`]), built and updated by the `index`
//! stage ([`build`]), queried by the `search` binary ([`search`]), exported for
//! Elasticsearch/OpenSearch ([`export`]), served as a search page and a JSON API by
//! `search --serve` ([`serve`]). Text is analyzed by [`analyzer`] (words,
//! jieba for Chinese, bigrams for kana).

pub mod analyzer;
pub mod bm25f;
pub mod build;
pub mod export;
pub mod query;
pub mod schema;
pub mod search;
pub mod serve;

pub use build::{IndexOpts, IndexReport};
pub use search::{Hit, Ranking, SearchRequest, SearchResults, Searcher, Snippet};

use std::path::{Path, PathBuf};

use crate::cli::CommonArgs;
use crate::error::{Error, Result};
use crate::stage::StageCtx;

/// The index a reader opens (`search`, `index --to jsonl`): `index_dir` when given,
/// else the crawl directory's `index/`. With an object-store crawl directory
/// (`s3://...`) that is the working mirror's `index/`, pulled first: only the index,
/// no other dataset is downloaded (and nothing when `index_dir` is given).
///
/// The mirror is let go on return (its lock released): the files stay, and a reader
/// open on them keeps reading them while a later stage on the same mirror replaces
/// them, as it does on a local directory.
pub fn locate(common: &CommonArgs, index_dir: Option<&Path>) -> Result<PathBuf> {
    if let Some(d) = index_dir {
        common.setup()?;
        return Ok(d.to_path_buf());
    }
    let ctx = StageCtx::from_index_args(common)?;
    let dir = ctx.crawl_dir().index();
    if let Some(uri) = ctx.store_uri()
        && build::read_state(&dir)?.is_none()
    {
        // Said of the store, not of the scratch mirror it was pulled into.
        return Err(Error::Index {
            message: format!(
                "{}: no search index on the store; build it with `index --crawl-dir {}` \
                 (after parse, updatedb, linkdb and pagerank)",
                uri.as_str(),
                uri.as_str()
            ),
        });
    }
    Ok(dir)
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
