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
pub mod schema;
pub mod search;
pub mod serve;

pub use build::{IndexOpts, IndexReport};
pub use search::{Hit, Ranking, SearchRequest, SearchResults, Searcher, Snippet};

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::layout::CrawlDir;
use crate::store::object::CrawlUri;

/// The index a query reads: `index_dir` when given, else the crawl directory's
/// `index/`. The index is always a local directory: with an object-store crawl
/// directory (`s3://...`) `--index-dir` is required (nothing is downloaded to search).
pub fn locate(crawl_dir: &Path, index_dir: Option<&Path>) -> Result<PathBuf> {
    if let Some(d) = index_dir {
        return Ok(d.to_path_buf());
    }
    match CrawlUri::parse(crawl_dir)? {
        CrawlUri::Local(root) => Ok(CrawlDir::new(root).index()),
        CrawlUri::Object(uri) => Err(Error::Input {
            input: format!("--crawl-dir {}", uri.as_str()),
            message: "the search index is a local directory: pass --index-dir PATH \
                      (the directory `index --index-dir PATH` built)"
                .into(),
        }),
    }
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
