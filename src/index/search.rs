//! Queries against the search index: parsing, ranking, snippets.
//!
//! **Query language** (tantivy's query parser): words (every word must match, in
//! any of the searched fields; when no page has them all, pages with some of them
//! are returned), `"a phrase"`, `AND`/`OR`/`NOT`, `+must`/`-must_not`, grouping
//! with parentheses, and field filters: `site:host` (exact host), `lang:en`,
//! `title:word`, `anchors:word`, `url:...` (exact URL).
//!
//! **Ranking** ([`Ranking`]): the text score of each query word is BM25F over the
//! page's own text (title, main text, the other visible text: the fields' weighted
//! term frequencies and lengths summed, one saturation, see [`super::bm25f`]), plus
//! BM25 of the anchor texts and of the URL's words, each times its weight. Phrases
//! are scored per field (BM25 of the phrase, times the field's weight). The final
//! score adds query-independent priors:
//!
//! ```text
//! score = Σ_words [ BM25F_{title, main_text, other_text}(w, d)
//!                   + w_anchors · BM25_anchors(w, d) + w_url · BM25_url(w, d) ]
//!       + w_pr · ln(1 + PageRank(d))       PageRank x pages: 1.0 is an average page
//!       + w_in · ln(1 + inlinks(d))
//!       + w_hr · ln(1 + HostRank(d))       HostRank x hosts
//!       - w_depth · url_depth(d)           path segments of the URL
//! ```
//!
//! [`Ranking::full`] is the default; its weights were tuned on a relevance set (see
//! docs/search.md for the method and the measured effect), [`Ranking::bm25`] is the
//! baseline it is measured against.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use std::collections::BTreeMap;
use tantivy::collector::{Count, TopDocs};

use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, QueryParser,
    TermQuery,
};
use tantivy::schema::{Field, Value};
use tantivy::snippet::SnippetGenerator;
use tantivy::{
    DocAddress, DocId, Index, IndexReader, ReloadPolicy, Score, SegmentReader, TantivyDocument,
    Term,
};

use crate::error::{Error, Result};

use super::analyzer::TEXT_ANALYZER;
use super::bm25f::CombinedTermQuery;
use super::build::{is_unsharded, open_index, read_version_state, shard_name};
use super::schema::{Fields, name};
use crate::store::versioned::VersionedDataset;

/// The weights of the ranking formula (see the module doc). A text field with weight
/// 0 is not searched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ranking {
    /// `title`, in the page's BM25F.
    pub title: f32,
    /// `anchors`.
    pub anchors: f32,
    /// `main_text`, in the page's BM25F.
    pub main_text: f32,
    /// `other_text` (the visible text outside the main text), in the page's BM25F.
    pub other_text: f32,
    /// `url_words`.
    pub url: f32,
    /// Weight of ln(1 + PageRank x pages).
    pub pagerank: f32,
    /// Weight of ln(1 + inlinks).
    pub inlinks: f32,
    /// Weight of ln(1 + HostRank x hosts).
    pub hostrank: f32,
    /// Penalty per path segment of the URL.
    pub depth: f32,
}

impl Ranking {
    /// BM25 alone: one BM25 over the page's own text (title, main text and the rest,
    /// weights 1: BM25 of their concatenation), no anchors, no URL, no priors.
    pub fn bm25() -> Ranking {
        Ranking {
            title: 1.0,
            anchors: 0.0,
            main_text: 1.0,
            other_text: 1.0,
            url: 0.0,
            pagerank: 0.0,
            inlinks: 0.0,
            hostrank: 0.0,
            depth: 0.0,
        }
    }

    /// The default ranking: every field and the priors.
    pub fn full() -> Ranking {
        Ranking {
            // Tuned on the tuning half of the relevance set (bench/src/relevance.rs,
            // docs/search.md "Ranking: measured"), but the title: neutral, its words
            // weigh what the main text's do. Heading queries leave it out (a heading
            // is often its page's title); on the natural queries of the tuning site
            // (Python's documentation) titles weighted 0, 1 or 2 gave the same MRR
            // within 0.001, so nothing supports weighting them more.
            title: 0.625,
            anchors: 0.15625,
            main_text: 0.625,
            other_text: 0.5,
            url: 0.08,
            // Chosen on the tuning sites with the template links out of the graph
            // (pagerank.ignore_template): of 0, 0.25, 0.5, 0.8 and 1.25, 0.5 has
            // the best mean relative MRR change over the book's headings (+0.4 %),
            // Python's headings (-1.2 %) and Python's natural queries (+6.6 %).
            // With the template links in the graph PageRank ranked a site's index,
            // modules and copyright pages first, and was shipped 0
            // (docs/search.md, "Measured on more sites").
            pagerank: 0.5,
            inlinks: 0.0,
            hostrank: 0.0,
            depth: 1.0,
        }
    }

    /// The fields of the page's BM25F and their weights.
    fn page_fields(&self, f: &Fields) -> [(Field, f32); 3] {
        [
            (f.title, self.title),
            (f.main_text, self.main_text),
            (f.other_text, self.other_text),
        ]
    }

    /// Every searched text field and its weight.
    fn weighted(&self, f: &Fields) -> [(Field, f32); 5] {
        let w = [
            self.title,
            self.anchors,
            self.main_text,
            self.other_text,
            self.url,
        ];
        let fields = f.searched();
        std::array::from_fn(|i| (fields[i], w[i]))
    }

    fn has_priors(&self) -> bool {
        self.pagerank != 0.0 || self.inlinks != 0.0 || self.hostrank != 0.0 || self.depth != 0.0
    }
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking::full()
    }
}

/// A search.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The query, in the query language of the module doc.
    pub query: String,
    /// Results wanted.
    pub top: usize,
    /// Results skipped (pagination).
    pub offset: usize,
    /// The ranking.
    pub ranking: Ranking,
    /// Also count the matching pages by site, language and content type
    /// ([`SearchResults::facets`]).
    pub facets: bool,
}

impl SearchRequest {
    /// The first `top` results of `query` with the default ranking.
    pub fn new(query: impl Into<String>, top: usize) -> Self {
        SearchRequest {
            query: query.into(),
            top,
            offset: 0,
            ranking: Ranking::full(),
            facets: false,
        }
    }
}

/// A passage of a page's text around the query's terms.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Snippet {
    /// The passage.
    pub text: String,
    /// Byte ranges of `text` that matched the query.
    pub highlights: Vec<Range<usize>>,
}

impl Snippet {
    /// The passage as HTML: escaped, the matches in `<b>`.
    pub fn to_html(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + 16);
        for (piece, hit) in self.pieces() {
            if hit {
                out.push_str("<b>");
                escape_into(&mut out, piece);
                out.push_str("</b>");
            } else {
                escape_into(&mut out, piece);
            }
        }
        out
    }

    /// The passage cut at its highlights, in order: `(piece, highlighted)`; ranges
    /// out of order or outside the text are skipped.
    pub fn pieces(&self) -> Vec<(&str, bool)> {
        let mut out = Vec::with_capacity(2 * self.highlights.len() + 1);
        let mut at = 0;
        for r in &self.highlights {
            if r.start < at {
                continue;
            }
            let (Some(before), Some(hit)) = (self.text.get(at..r.start), self.text.get(r.clone()))
            else {
                continue;
            };
            out.push((before, false));
            out.push((hit, true));
            at = r.end;
        }
        out.push((self.text.get(at..).unwrap_or(""), false));
        out
    }
}

/// Appends `s` to `out`, HTML-escaped.
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// One result.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    /// The page.
    pub url: String,
    /// Its title.
    pub title: Option<String>,
    /// Its host.
    pub host: String,
    /// The final score.
    pub score: f32,
    /// Its PageRank x pages.
    pub pagerank: f64,
    /// The passage around the query's terms.
    pub snippet: Snippet,
    /// The section of the page whose heading matches the query best, when the page
    /// has headings a link can point at (`url#id`).
    pub section: Option<Section>,
}

/// A section of a page: a heading with an id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    /// The heading's id: the section is at `url#id`.
    pub id: String,
    /// The heading's text.
    pub heading: String,
}

/// How many matching pages have each value of a field, most first (at most
/// [`FACET_VALUES`] values).
pub type FacetCounts = Vec<(String, u64)>;

/// Values counted per facet.
pub const FACET_VALUES: usize = 10;

/// Values of a facet each shard counts (their counts summed over the shards): more
/// than are shown, so that a value common in the whole index but in no shard's top
/// [`FACET_VALUES`] is still counted in most shards.
const SHARD_FACET_VALUES: usize = 10 * FACET_VALUES;

/// The matching pages counted by site, language and media type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Facets {
    /// By host (`site:HOST` narrows the query to one).
    pub site: FacetCounts,
    /// By declared language (`lang:LANG`).
    pub lang: FacetCounts,
    /// By media type (`type:MEDIA`).
    pub content_type: FacetCounts,
}

/// The results of a search.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResults {
    /// Pages matching the query.
    pub total: usize,
    /// Whether the words were OR-ed because no page had them all.
    pub relaxed: bool,
    /// The results `offset..offset + top`, best first.
    pub hits: Vec<Hit>,
    /// With [`SearchRequest::facets`]: the matching pages counted by site, language
    /// and media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<Facets>,
}

/// No result past this rank is served (`offset + top` must not exceed it), as with
/// Elasticsearch's `index.max_result_window`: deep pages cost memory per request.
pub const MAX_RESULT_WINDOW: usize = 10_000;

/// Whether `query`, as it is searched ([`super::query::normalize`]), is bare words
/// (no field, phrase, operator, sign or grouping; a pasted `TypeError: x` is two
/// words): only such a query is relaxed to OR when no page has every word, so that
/// a filter (`site:`, `lang:`, a phrase, `+word`, `-word`) is never dropped.
fn bare_words(query: &str) -> bool {
    let q = super::query::normalize(query);
    !q.contains([':', '"', '(', ')', '*', '[', '{', '^'])
        && !q
            .split_whitespace()
            .any(|w| w.starts_with(['-', '+']) || matches!(w, "AND" | "OR" | "NOT" | "IN"))
}

/// `query` with the host of every `site:` clause lowercased (hosts are stored
/// lowercase; `site:Example.COM` finds `example.com`).
fn lowercase_sites(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut rest = query;
    while let Some(at) = rest.find("site:") {
        let (before, after) = rest.split_at(at + "site:".len());
        out.push_str(before);
        let end = after
            .find(|c: char| c.is_whitespace() || c == ')')
            .unwrap_or(after.len());
        out.push_str(&after[..end].to_lowercase());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// An open index, ready for queries (cheap to share between threads): every shard of
/// its installed version, searched together with the statistics of all of them, so a
/// page scores what it would in one index of every page. A new version installed by
/// `index` is opened at the first query a second or more after the last check.
pub struct Searcher {
    dir: PathBuf,
    /// The first shard's index: the schema and analyzer queries are parsed with.
    index: Index,
    fields: Fields,
    shards: RwLock<Arc<Shards>>,
    checked: Mutex<Instant>,
}

/// The shards of one installed version of the index.
struct Shards {
    version: String,
    readers: Vec<IndexReader>,
}

impl Shards {
    /// The installed version's shards; while an install is between its two renames
    /// (a run killed there, before the next `index` repairs it), the previous version
    /// (`old/`), read as it is.
    fn open(dir: &Path) -> Result<(Shards, Index)> {
        let db = VersionedDataset::new(dir);
        // Read before the state: a version installed in between is seen next time.
        let mut version = db.version_id()?;
        let mut at = db.current();
        let mut state = read_version_state(&at)?;
        if state.is_none() && !at.exists() && crate::store::parquet::dataset_complete(&db.old()) {
            at = db.old();
            version = crate::store::integrity::hash_file(&at.join(crate::store::names::SUCCESS))?.1;
            state = read_version_state(&at)?;
        }
        let Some(state) = state else {
            let message = if is_unsharded(dir) {
                format!(
                    "{}: an index built by a trawl before shards (one tantivy index); run `index` \
                     (it indexes every segment again into one shard per partition)",
                    dir.display()
                )
            } else {
                format!(
                    "{}: no search index here; build it with `index --crawl-dir CRAWL` \
                     (after parse, updatedb, linkdb and pagerank)",
                    dir.display()
                )
            };
            return Err(Error::Index { message });
        };
        let mut readers = Vec::with_capacity(state.partitions);
        let mut first = None;
        for i in 0..state.partitions {
            let shard = at.join(shard_name(i));
            let index = open_index(&shard, false)?;
            let reader = index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()
                .map_err(|e| Error::Index {
                    message: format!("{}: cannot open a reader: {e}", shard.display()),
                })?;
            readers.push(reader);
            first.get_or_insert(index);
        }
        let index = first.ok_or_else(|| Error::Index {
            message: format!("{}: the index has no shard", dir.display()),
        })?;
        Ok((Shards { version, readers }, index))
    }

    fn searchers(&self) -> Vec<tantivy::Searcher> {
        self.readers.iter().map(|r| r.searcher()).collect()
    }
}

/// The BM25 statistics of every shard together: what one index of all their
/// documents would give.
struct AllShards<'a>(&'a [tantivy::Searcher]);

impl Bm25StatisticsProvider for AllShards<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.0.iter().try_fold(0, |n, s| {
            Ok(n + Bm25StatisticsProvider::total_num_tokens(s, field)?)
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.0
            .iter()
            .try_fold(0, |n, s| Ok(n + Bm25StatisticsProvider::total_num_docs(s)?))
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.0.iter().try_fold(0, |n, s| Ok(n + s.doc_freq(term)?))
    }
}

/// A hit before its document is read: its score, its shard and its address there.
type Found = (Score, usize, DocAddress);

/// How often a searcher looks for a new version of the index.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

impl Searcher {
    /// Opens the index whose base directory is `dir` (`index/`): every shard of its
    /// installed version.
    pub fn open(dir: &Path) -> Result<Searcher> {
        let (shards, index) = Shards::open(dir)?;
        let fields = Fields::of(&index.schema())?;
        Ok(Searcher {
            dir: dir.to_path_buf(),
            index,
            fields,
            shards: RwLock::new(Arc::new(shards)),
            checked: Mutex::new(Instant::now()),
        })
    }

    /// The shards of the installed version: reopened when `index` installed another
    /// since the last check (kept when the new one cannot be opened, which is said).
    fn current(&self) -> Arc<Shards> {
        let due = self
            .checked
            .lock()
            .map(|mut t| {
                let due = t.elapsed() >= RELOAD_CHECK;
                if due {
                    *t = Instant::now();
                }
                due
            })
            .unwrap_or(false);
        let held = self
            .shards
            .read()
            .map(|s| Arc::clone(&s))
            .unwrap_or_else(|p| Arc::clone(&p.into_inner()));
        if !due {
            return held;
        }
        let now = VersionedDataset::new(&self.dir)
            .version_id()
            .unwrap_or_default();
        if now.is_empty() || now == held.version {
            return held;
        }
        match Shards::open(&self.dir) {
            Ok((shards, _)) => {
                let shards = Arc::new(shards);
                if let Ok(mut s) = self.shards.write() {
                    *s = Arc::clone(&shards);
                }
                tracing::info!(
                    "{}: a new version of the index is searched",
                    self.dir.display()
                );
                shards
            }
            Err(e) => {
                tracing::warn!("{}: keeping the version searched: {e}", self.dir.display());
                held
            }
        }
    }

    /// A searcher over each shard of the installed version, in partition order.
    pub fn shard_searchers(&self) -> Vec<tantivy::Searcher> {
        self.current().searchers()
    }

    /// The index's fields.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// Documents in the index.
    pub fn num_docs(&self) -> u64 {
        self.shard_searchers().iter().map(|s| s.num_docs()).sum()
    }

    fn parser(&self, ranking: &Ranking, conjunction: bool) -> QueryParser {
        let fields: Vec<Field> = ranking
            .weighted(&self.fields)
            .iter()
            .filter(|(_, w)| *w > 0.0)
            .map(|(f, _)| *f)
            .collect();
        // No boosts: `rank` applies the weights when it rewrites the parsed query.
        let mut parser = QueryParser::for_index(&self.index, fields);
        if conjunction {
            parser.set_conjunction_by_default();
        }
        parser
    }

    /// The parsed query with the ranking applied: every word searched in the
    /// default fields (the parser's `Should` group of one term per field) becomes the
    /// page's BM25F plus the weighted BM25 of anchors and URL; a phrase's per-field
    /// queries are weighted by their field's weight; the rest is kept.
    fn rank(&self, q: &dyn Query, ranking: &Ranking) -> Box<dyn Query> {
        let Some(b) = q.downcast_ref::<BooleanQuery>() else {
            return q.box_clone();
        };
        let weights = ranking.weighted(&self.fields);
        let weight = |f: Field| weights.iter().find(|(g, _)| *g == f).map(|(_, w)| *w);
        let clauses = b.clauses();
        let field_of = |q: &dyn Query| {
            q.downcast_ref::<TermQuery>()
                .map(|t| t.term().field())
                .or_else(|| q.downcast_ref::<PhraseQuery>().map(|p| p.field()))
        };
        // The parser's expansion of one word or phrase over the default fields: one
        // `Should` clause per searched field (not a user's own `title:x OR ...`).
        let searched: Vec<Field> = weights
            .iter()
            .filter(|(_, w)| *w > 0.0)
            .map(|(f, _)| *f)
            .collect();
        let mut fields: Vec<Field> = clauses
            .iter()
            .filter(|(o, _)| *o == Occur::Should)
            .filter_map(|(_, q)| field_of(q.as_ref()))
            .collect();
        fields.sort_unstable_by_key(|f| f.field_id());
        fields.dedup();
        let group = clauses.len() > 1
            && clauses.len() == searched.len()
            && fields.len() == searched.len()
            && fields.iter().all(|f| searched.contains(f));
        if group {
            let words: Vec<&TermQuery> = clauses
                .iter()
                .filter_map(|(_, q)| q.downcast_ref::<TermQuery>())
                .collect();
            let text = words
                .first()
                .and_then(|t| t.term().value().as_str().map(str::to_string));
            if let Some(text) = text.filter(|t| {
                words.len() == clauses.len()
                    && words
                        .iter()
                        .all(|w| w.term().value().as_str() == Some(t.as_str()))
            }) {
                let text = text.as_str();
                let page = ranking.page_fields(&self.fields);
                let mut parts: Vec<(Occur, Box<dyn Query>)> = Vec::new();
                if page.iter().any(|(_, w)| *w > 0.0) {
                    parts.push((Occur::Should, Box::new(CombinedTermQuery::new(text, &page))));
                }
                for w in &words {
                    let f = w.term().field();
                    if page.iter().any(|(g, _)| *g == f) {
                        continue;
                    }
                    let boost = weight(f).unwrap_or(1.0);
                    parts.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(Box::new((*w).clone()), boost)),
                    ));
                }
                return match parts.len() {
                    1 => parts.remove(0).1,
                    _ => Box::new(BooleanQuery::new(parts)),
                };
            }
            let boosted = clauses
                .iter()
                .map(|(o, q)| {
                    let w = field_of(q.as_ref()).and_then(weight).unwrap_or(1.0);
                    let q: Box<dyn Query> = Box::new(BoostQuery::new(q.box_clone(), w));
                    (*o, q)
                })
                .collect();
            return Box::new(BooleanQuery::new(boosted));
        }
        let mut out = BooleanQuery::new(
            clauses
                .iter()
                .map(|(o, q)| (*o, self.rank(q.as_ref(), ranking)))
                .collect(),
        );
        out.set_minimum_number_should_match(b.get_minimum_number_should_match());
        Box::new(out)
    }

    /// Parses `query` for `ranking`: what the user typed, normalized
    /// ([`super::query::normalize`]: special characters outside the grammar's
    /// deliberate uses are word boundaries, so pasted messages, paths and code search
    /// their words), or when that does not parse (`AND` with nothing after it, ...)
    /// its words alone. A query with no word is [`Error::Query`].
    pub fn parse(
        &self,
        query: &str,
        ranking: &Ranking,
        conjunction: bool,
    ) -> Result<Box<dyn Query>> {
        let q = query.trim();
        if q.is_empty() {
            return Err(Error::Query {
                query: query.to_string(),
                message: "the query is empty: type one or more words".into(),
            });
        }
        let normalized = super::query::normalize(q);
        let no_words = || Error::Query {
            query: query.to_string(),
            message: "the query has no words, only special characters: type one or more words"
                .into(),
        };
        if normalized.is_empty() {
            return Err(no_words());
        }
        let parser = self.parser(ranking, conjunction);
        let parsed = match parser.parse_query(&lowercase_sites(&normalized)) {
            Ok(p) => p,
            Err(e) => {
                let words = super::query::words(q);
                tracing::debug!(
                    "query {q:?} as {normalized:?} does not parse ({e}): searching its words {words:?}"
                );
                if words.is_empty() {
                    return Err(no_words());
                }
                parser.parse_query(&words).map_err(|e| Error::Query {
                    query: query.to_string(),
                    message: format!(
                        "cannot parse it ({e}); write words, \"a phrase\", AND/OR/NOT, -word, \
                         site:host, lang:xx, type:pdf, title:word"
                    ),
                })?
            }
        };
        Ok(self.rank(parsed.as_ref(), ranking))
    }

    /// Runs a search.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResults> {
        if req.offset.saturating_add(req.top) > MAX_RESULT_WINDOW {
            return Err(Error::Query {
                query: req.query.clone(),
                message: format!(
                    "results past the {MAX_RESULT_WINDOW}th are not served (offset {} + top {}): narrow the query",
                    req.offset, req.top
                ),
            });
        }
        let searchers = self.shard_searchers();
        let strict = self.parse(&req.query, &req.ranking, true)?;
        let (mut query, mut relaxed) = (strict, false);
        let mut found = self.collect(&searchers, &*query, req)?;
        if found.1 == 0 && bare_words(&req.query) {
            let loose = self.parse(&req.query, &req.ranking, false)?;
            let again = self.collect(&searchers, &*loose, req)?;
            if again.1 > 0 {
                (query, relaxed, found) = (loose, true, again);
            }
        }
        let (top, total) = found;
        let facets = if req.facets {
            Some(self.facets(&searchers, &*query, req)?)
        } else {
            None
        };
        let snippets = self.snippet_generator(&searchers, &*query)?;
        let words = query_words(&req.query);
        let mut hits = Vec::with_capacity(top.len());
        for (score, shard, addr) in top {
            let doc: TantivyDocument = searchers[shard].doc(addr).map_err(|e| Error::Index {
                message: format!("cannot read a stored document: {e}"),
            })?;
            let text = |f: Field| {
                doc.get_first(f)
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            };
            let mut snippet = Snippet::default();
            for field in [self.fields.main_text, self.fields.other_text] {
                let Some(t) = text(field) else { continue };
                let s = snippets.snippet(&t);
                if !s.highlighted().is_empty() {
                    snippet = Snippet {
                        text: s.fragment().to_string(),
                        highlights: s.highlighted().to_vec(),
                    };
                    break;
                }
                if snippet.text.is_empty() {
                    snippet.text = lead(&t, 240).to_string();
                }
            }
            hits.push(Hit {
                url: text(self.fields.url).unwrap_or_default(),
                title: text(self.fields.title),
                host: text(self.fields.site).unwrap_or_default(),
                score,
                pagerank: doc
                    .get_first(self.fields.pagerank)
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0),
                snippet,
                section: text(self.fields.sections)
                    .and_then(|s| best_section(&s, &words, text(self.fields.title).as_deref())),
            });
        }
        Ok(SearchResults {
            total,
            relaxed,
            hits,
            facets,
        })
    }

    /// The pages matching `query` counted by site, language and media type (the
    /// indexed content types without parameters), from the fields' fast columns of
    /// every shard (each shard's counts summed; a shard gives its top
    /// [`SHARD_FACET_VALUES`] values of a field).
    fn facets(
        &self,
        searchers: &[tantivy::Searcher],
        query: &dyn Query,
        req: &SearchRequest,
    ) -> Result<Facets> {
        use tantivy::aggregation::agg_req::Aggregations;
        use tantivy::aggregation::{AggContextParams, AggregationCollector};
        let terms = |field: &str, size: usize| serde_json::json!({ "terms": { "field": field, "size": size } });
        let mut counts: [BTreeMap<String, u64>; 3] = Default::default();
        const NAMES: [&str; 3] = ["site", "lang", "content_type"];
        let request: Aggregations = serde_json::from_value(serde_json::json!({
            "site": terms(name::SITE, SHARD_FACET_VALUES),
            "lang": terms(name::LANG, SHARD_FACET_VALUES),
            // Both a type as served and its media type are indexed: room for both.
            "content_type": terms(name::CONTENT_TYPE, 4 * SHARD_FACET_VALUES),
        }))
        .map_err(|e| Error::Internal {
            message: format!("the facets' aggregation request: {e}"),
        })?;
        for searcher in searchers {
            let collector =
                AggregationCollector::from_aggs(request.clone(), AggContextParams::default());
            let result = searcher.search(query, &collector).map_err(|e| Error::Query {
                query: req.query.clone(),
                message: format!(
                    "cannot count its facets ({e}); an index built before facets needs `index` run again"
                ),
            })?;
            let value = serde_json::to_value(&result).map_err(|e| Error::Internal {
                message: format!("the facets' aggregation result: {e}"),
            })?;
            for (name, into) in NAMES.iter().zip(counts.iter_mut()) {
                for b in value[*name]["buckets"].as_array().into_iter().flatten() {
                    if let (Some(k), Some(n)) = (b["key"].as_str(), b["doc_count"].as_u64()) {
                        *into.entry(k.to_string()).or_insert(0) += n;
                    }
                }
            }
        }
        let top = |c: &BTreeMap<String, u64>, keep: &dyn Fn(&str) -> bool| -> FacetCounts {
            let mut v: Vec<(String, u64)> = c
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, n)| (k.clone(), *n))
                .collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(FACET_VALUES);
            v
        };
        Ok(Facets {
            site: top(&counts[0], &|_| true),
            lang: top(&counts[1], &|_| true),
            content_type: top(&counts[2], &|k| !k.contains(';')),
        })
    }

    /// A snippet generator for the words of `query` in any text field: the stored
    /// main text is tried first, then the whole text. A word's rarity is counted over
    /// every shard.
    fn snippet_generator(
        &self,
        searchers: &[tantivy::Searcher],
        query: &dyn Query,
    ) -> Result<SnippetGenerator> {
        let fields = self.fields.searched();
        let stats = AllShards(searchers);
        let mut terms = BTreeMap::new();
        let mut failed = None;
        query.query_terms(&mut |term, _| {
            if !fields.contains(&term.field()) {
                return;
            }
            if let Some(t) = term.value().as_str() {
                match stats.doc_freq(term) {
                    Ok(df) if df > 0 => {
                        // Rarer words weigh more in the choice of the passage.
                        let w: &mut f32 = terms.entry(t.to_string()).or_insert(0.0);
                        *w = w.max(1.0 / (1.0 + df as f32));
                    }
                    Ok(_) => {}
                    Err(e) => failed = Some(e),
                }
            }
        });
        if let Some(e) = failed {
            return Err(Error::Index {
                message: format!("cannot read a term's document frequency: {e}"),
            });
        }
        let analyzer = self
            .index
            .tokenizers()
            .get(TEXT_ANALYZER)
            .ok_or_else(|| Error::Index {
                message: format!("the analyzer `{TEXT_ANALYZER}` is not registered"),
            })?;
        Ok(SnippetGenerator::new(
            terms,
            analyzer,
            self.fields.main_text,
            240,
        ))
    }

    /// The window `req` asks for of the hits of `query` over every shard (each
    /// shard's best `offset + top`, scored with every shard's statistics, merged by
    /// score; equal scores in shard, then document order), and how many pages match.
    fn collect(
        &self,
        searchers: &[tantivy::Searcher],
        query: &dyn Query,
        req: &SearchRequest,
    ) -> Result<(Vec<Found>, usize)> {
        let stats = AllShards(searchers);
        let limit = req.offset.saturating_add(req.top.max(1));
        let mut all: Vec<Found> = Vec::new();
        let mut total = 0;
        for (shard, searcher) in searchers.iter().enumerate() {
            let (docs, n) = self.collect_shard(searcher, &stats, query, req, limit)?;
            total += n;
            all.extend(docs.into_iter().map(|(score, addr)| (score, shard, addr)));
        }
        all.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.1.cmp(&b.1))
                .then_with(|| a.2.cmp(&b.2))
        });
        let top = all
            .into_iter()
            .skip(req.offset)
            .take(req.top.max(1))
            .collect();
        Ok((top, total))
    }

    /// One shard's best `limit` hits and its count of matches.
    fn collect_shard(
        &self,
        searcher: &tantivy::Searcher,
        stats: &AllShards<'_>,
        query: &dyn Query,
        req: &SearchRequest,
        limit: usize,
    ) -> Result<(Vec<(Score, DocAddress)>, usize)> {
        let top = TopDocs::with_limit(limit);
        // A query the parser accepted but the index cannot run (`title:*` on a field
        // that is not a fast field, say) is the query's fault, not the index's.
        let fail = |e: tantivy::TantivyError| match e {
            tantivy::TantivyError::SchemaError(m) | tantivy::TantivyError::InvalidArgument(m) => {
                Error::Query {
                    query: req.query.clone(),
                    message: format!("cannot run it ({m}); `field:*` works only on numeric fields"),
                }
            }
            e => Error::Index {
                message: format!("search failed: {e}"),
            },
        };
        if !req.ranking.has_priors() {
            return searcher
                .search_with_statistics_provider(query, &(top.order_by_score(), Count), stats)
                .map_err(fail);
        }
        let r = req.ranking;
        let collector = top.tweak_score(move |seg: &SegmentReader| {
            let f64_col = |n: &str, default: f64| {
                seg.fast_fields()
                    .f64(n)
                    .ok()
                    .map(|c| c.first_or_default_col(default))
            };
            let u64_col = |n: &str| {
                seg.fast_fields()
                    .u64(n)
                    .ok()
                    .map(|c| c.first_or_default_col(0))
            };
            let (pr, hr) = (f64_col(name::PAGERANK, 1.0), f64_col(name::HOSTRANK, 0.0));
            let (inl, depth) = (u64_col(name::INLINKS), u64_col(name::URL_DEPTH));
            move |doc: DocId, score: Score| {
                let pr = pr.as_ref().map_or(1.0, |c| c.get_val(doc));
                let hr = hr.as_ref().map_or(0.0, |c| c.get_val(doc));
                let inl = inl.as_ref().map_or(0, |c| c.get_val(doc));
                let depth = depth.as_ref().map_or(0, |c| c.get_val(doc));
                score
                    + r.pagerank * (pr.max(0.0).ln_1p() as f32)
                    + r.inlinks * ((inl as f64).ln_1p() as f32)
                    + r.hostrank * (hr.max(0.0).ln_1p() as f32)
                    - r.depth * depth as f32
            }
        });
        searcher
            .search_with_statistics_provider(query, &(collector, Count), stats)
            .map_err(fail)
    }
}

/// The words of a text, lower case (letters and digits), a plural's `s`/`es` cut
/// ("indexes" is "index"), to match headings with.
fn query_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            let n = w.chars().count();
            if n > 4 && w.ends_with("es") {
                w[..w.len() - 2].to_string()
            } else if n > 3 && w.ends_with('s') && !w.ends_with("ss") {
                w[..w.len() - 1].to_string()
            } else {
                w
            }
        })
        .collect()
}

/// The section of `sections` (`level<TAB>id<TAB>text` lines, in page order) a
/// result links to: among the h2 and h3 headings (an h1 is the page itself), the one
/// holding the most of the query's `words` that the page's `title` does not (the
/// page answers those already), then the most query words, the first on a tie;
/// `None` when no heading holds a word the title lacks.
fn best_section(sections: &str, words: &[String], title: Option<&str>) -> Option<Section> {
    let in_title = query_words(title.unwrap_or(""));
    let mut best: Option<((usize, usize), Section)> = None;
    for line in sections.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(level), Some(id), Some(heading)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if level == "1" {
            continue;
        }
        let hw = query_words(heading);
        let held: Vec<&String> = words.iter().filter(|w| hw.contains(w)).collect();
        let novel = held.iter().filter(|w| !in_title.contains(w)).count();
        let rank = (novel, held.len());
        if novel > 0 && best.as_ref().is_none_or(|(r, _)| rank > *r) {
            best = Some((
                rank,
                Section {
                    id: id.to_string(),
                    heading: heading.to_string(),
                },
            ));
        }
    }
    best.map(|(_, s)| s)
}

/// Writes `results` for a terminal: one block per hit (rank, title, URL, score, the
/// snippet with the matches in `[...]`), then a count line.
pub fn write_text(
    out: &mut impl std::io::Write,
    req: &SearchRequest,
    results: &SearchResults,
) -> std::io::Result<()> {
    for (i, h) in results.hits.iter().enumerate() {
        let title = h.title.as_deref().unwrap_or("(no title)");
        writeln!(out, "{}. {title}", req.offset + i + 1)?;
        writeln!(out, "   {}  (score {:.3})", h.url, h.score)?;
        if let Some(s) = &h.section {
            writeln!(out, "   § {}  {}#{}", s.heading, h.url, s.id)?;
        }
        let mut line = String::new();
        for (piece, hit) in h.snippet.pieces() {
            if hit {
                line.push('[');
                line.push_str(piece);
                line.push(']');
            } else {
                line.push_str(piece);
            }
        }
        let line = line.replace(['\n', '\r'], " ");
        if !line.is_empty() {
            writeln!(out, "   {line}")?;
        }
    }
    let shown = results.hits.len();
    let relaxed = if results.relaxed {
        " (no page has every word: pages with some of them)"
    } else {
        ""
    };
    writeln!(
        out,
        "{} of {} results{relaxed}",
        if shown == 0 {
            "0".to_string()
        } else {
            format!("{}-{}", req.offset + 1, req.offset + shown)
        },
        results.total
    )?;
    if let Some(f) = &results.facets {
        for (name, counts) in [
            ("site", &f.site),
            ("lang", &f.lang),
            ("type", &f.content_type),
        ] {
            if !counts.is_empty() {
                let list: Vec<String> = counts.iter().map(|(v, n)| format!("{v} ({n})")).collect();
                writeln!(out, "{name}: {}", list.join(", "))?;
            }
        }
    }
    Ok(())
}

/// The first `max` bytes of `s`, cut at a word boundary when there is one.
fn lead(s: &str, max: usize) -> &str {
    let cut = super::cut(s, max);
    if cut.len() == s.len() {
        return s;
    }
    match cut.rfind(' ') {
        Some(sp) if sp > max / 2 => &s[..sp],
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::Snippet;

    /// The section whose h2/h3 heading holds the most query words, the first on a
    /// tie; none when no heading holds any.
    #[test]
    fn the_best_section_is_the_heading_with_the_most_query_words() {
        use super::{best_section, query_words};
        let sections = "1\ttop\tCREATE INDEX\n2\tname\tCREATE INDEX\n2\td\tDescription\n3\tstorage\tIndex Storage Parameters\n3\tconc\tBuilding Indexes Concurrently\nbroken line";
        let best =
            |q: &str| best_section(sections, &query_words(q), Some("CREATE INDEX")).map(|s| s.id);
        // "concurrently" is the word the title lacks; "indexes" is "index".
        assert_eq!(best("create index concurrently").as_deref(), Some("conc"));
        assert_eq!(best("storage parameters").as_deref(), Some("storage"));
        assert_eq!(best("description of indexes").as_deref(), Some("d"));
        // Only the title's words: the page itself, no section; none with no word.
        assert_eq!(best("create index").as_deref(), None);
        assert_eq!(best("vacuum"), None);
        // Without a title every word counts; the first of equals wins.
        let untitled = best_section(sections, &query_words("index"), None).map(|s| s.id);
        assert_eq!(untitled.as_deref(), Some("name"));
    }

    /// An install stopped between its two renames (no `current/`) leaves the previous
    /// version searchable: `old/` is read as it is.
    #[test]
    fn without_current_the_previous_version_is_searched() {
        use super::super::build::create_empty;
        use super::Searcher;

        let dir = tempfile::tempdir().unwrap();
        create_empty(dir.path(), 3).unwrap();
        std::fs::rename(dir.path().join("current"), dir.path().join("old")).unwrap();
        let s = Searcher::open(dir.path()).unwrap();
        assert_eq!(s.shard_searchers().len(), 3);
        assert_eq!(s.num_docs(), 0);
        std::fs::remove_dir_all(dir.path().join("old")).unwrap();
        assert!(Searcher::open(dir.path()).is_err());
    }

    /// Whatever is typed parses: the normalized query, or its words (issue 39).
    #[test]
    fn pasted_text_always_parses() {
        use super::super::build::create_empty;
        use super::{Ranking, Searcher};

        let dir = tempfile::tempdir().unwrap();
        create_empty(dir.path(), 2).unwrap();
        let s = Searcher::open(dir.path()).unwrap();
        for q in [
            "TypeError: unhashable type: 'list'",
            "cats AND",
            "NOT",
            "OR dogs",
            "a:b:c",
            "[x TO",
            "x^",
            "title:",
            "title:\"",
            "(a OR (b)",
            "-(a b)",
            "~/.bashrc",
            "SELECT * FROM t WHERE a = 'b';",
            "{\"key\": [1, 2]}",
            "url:https://x.test/a?b=c",
            "site:-x",
        ] {
            for conjunction in [true, false] {
                assert!(
                    s.parse(q, &Ranking::full(), conjunction).is_ok(),
                    "{q:?}: {:?}",
                    s.parse(q, &Ranking::full(), conjunction).err()
                );
            }
        }
        for nothing in ["::", "\\", "\"(\"", "- + *"] {
            assert!(
                s.parse(nothing, &Ranking::full(), true).is_err(),
                "{nothing:?}"
            );
        }
    }

    /// A word over the default fields becomes BM25F of the page's fields plus the
    /// weighted anchors and URL; a user's own field clauses are left alone.
    #[test]
    fn words_over_the_default_fields_become_bm25f() {
        use super::super::bm25f::CombinedTermQuery;
        use super::super::build::create_empty;
        use super::{Ranking, Searcher};
        use tantivy::query::BooleanQuery;

        let dir = tempfile::tempdir().unwrap();
        create_empty(dir.path(), 2).unwrap();
        let s = Searcher::open(dir.path()).unwrap();
        let full = Ranking::full();
        let q = s.parse("Rust", &full, true).unwrap();
        let b = q
            .downcast_ref::<BooleanQuery>()
            .expect("BM25F + anchors + url");
        assert_eq!(b.clauses().len(), 3, "{q:?}");
        let combined = b.clauses()[0]
            .1
            .downcast_ref::<CombinedTermQuery>()
            .expect("the page's BM25F first");
        assert_eq!(combined.terms().len(), 3, "title, main_text, other_text");
        // BM25 alone: one BM25F, nothing else.
        let q = s.parse("Rust", &Ranking::bm25(), true).unwrap();
        assert!(q.downcast_ref::<CombinedTermQuery>().is_some(), "{q:?}");
        // Two words: a conjunction of two.
        let q = s.parse("rust crawler", &Ranking::bm25(), true).unwrap();
        let b = q.downcast_ref::<BooleanQuery>().unwrap();
        assert!(
            b.clauses()
                .iter()
                .all(|(_, c)| c.downcast_ref::<CombinedTermQuery>().is_some()),
            "{q:?}"
        );
        // The user's own fields are searched as written.
        let q = s
            .parse("title:rust OR main_text:rust", &full, true)
            .unwrap();
        assert!(format!("{q:?}").contains("TermQuery"), "{q:?}");
        assert!(!format!("{q:?}").contains("CombinedTermQuery"), "{q:?}");
    }

    #[test]
    fn only_bare_words_are_relaxed_and_sites_are_lowercased() {
        use super::{bare_words, lowercase_sites};
        assert!(bare_words("rust crawler"));
        assert!(!bare_words("rust site:a.test"));
        assert!(!bare_words("\"a phrase\""));
        assert!(!bare_words("rust OR go"));
        assert!(!bare_words("-rust go"));
        assert!(bare_words("TypeError: unhashable type: 'list'"));
        assert!(bare_words("f-string --no-deps os.path.join"));
        assert_eq!(
            lowercase_sites("Rust site:A.Test (site:B.TEST)"),
            "Rust site:a.test (site:b.test)"
        );
    }

    #[test]
    fn snippet_html_is_escaped_and_highlighted() {
        let s = Snippet {
            text: "a <b> & rust & go".into(),
            highlights: vec![8..12, 15..17],
        };
        assert_eq!(s.to_html(), "a &lt;b&gt; &amp; <b>rust</b> &amp; <b>go</b>");
    }
}
