//! The search index: what trawl crawls becomes searchable (docs/search.md).
//!
//! An embedded [tantivy](https://docs.rs/tantivy) index in the crawl's `index/`
//! directory, one document per page ([`schema`]), built and updated by the `index`
//! stage ([`build`]), queried by the `search` binary ([`search`]), exported for
//! Elasticsearch/OpenSearch ([`export`]), served as a search page and a JSON API by
//! `search --serve` ([`serve`]). Text is analyzed by [`analyzer`] (words,
//! jieba for Chinese, bigrams for kana).

pub mod analyzer;
pub mod build;
pub mod export;
pub mod schema;
pub mod search;
pub mod serve;

pub use build::{IndexOpts, IndexReport};
pub use search::{Hit, Ranking, SearchRequest, SearchResults, Searcher, Snippet};
