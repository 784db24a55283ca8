//! The document model of the search index: one tantivy document per indexed page.
//!
//! | field | indexed as | stored | fast | what |
//! |---|---|---|---|---|
//! | `url` | exact term | yes | | the page's URL (the document's key) |
//! | `site` | exact term | yes | | its host (`site:host` in queries) |
//! | `title` | text (`trawl_text`) | yes | | `<title>` |
//! | `anchors` | text | yes | | anchor texts of its inlinks, deduplicated, capped |
//! | `main_text` | text | yes | | the main content |
//! | `other_text` | text | yes | | the visible text outside the main content (all of it when none was found) |
//! | `url_words` | text | | | the words of the URL (host and path) |
//! | `lang` | exact term | yes | | `<html lang>`, lowercase (`lang:en`) |
//! | `content_type` | exact term | yes | | the content type parsed, and its media type alone (`text/html`) as a second term |
//! | `segment` | exact term | yes | | the segment the page was indexed from |
//! | `fetch_time` | date | yes | yes | when the page was fetched |
//! | `pagerank` | f64 | yes | yes | PageRank x pages (1.0 = average page) |
//! | `hostrank` | f64 | yes | yes | HostRank x hosts (0 when not computed) |
//! | `inlinks` | u64 | yes | yes | distinct pages linking to it |
//! | `url_depth` | u64 | yes | yes | path segments of the URL (`/` is 0) |
//! | `crawl_depth` | u64 | yes | yes | links from a seed |

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, SchemaBuilder,
    TextFieldIndexing, TextOptions,
};

use crate::error::{Error, Result};

use super::analyzer::TEXT_ANALYZER;

/// Field names (the query language's `field:` prefixes and the export's keys).
pub mod name {
    /// The page's URL.
    pub const URL: &str = "url";
    /// The page's host.
    pub const SITE: &str = "site";
    /// The page's title.
    pub const TITLE: &str = "title";
    /// The anchor texts of its inlinks.
    pub const ANCHORS: &str = "anchors";
    /// The main content.
    pub const MAIN_TEXT: &str = "main_text";
    /// The visible text outside the main content.
    pub const OTHER_TEXT: &str = "other_text";
    /// The URL's words.
    pub const URL_WORDS: &str = "url_words";
    /// `<html lang>`.
    pub const LANG: &str = "lang";
    /// The content type.
    pub const CONTENT_TYPE: &str = "content_type";
    /// The segment it was indexed from.
    pub const SEGMENT: &str = "segment";
    /// When it was fetched.
    pub const FETCH_TIME: &str = "fetch_time";
    /// PageRank x pages.
    pub const PAGERANK: &str = "pagerank";
    /// HostRank x hosts.
    pub const HOSTRANK: &str = "hostrank";
    /// Inlink count.
    pub const INLINKS: &str = "inlinks";
    /// URL path depth.
    pub const URL_DEPTH: &str = "url_depth";
    /// Crawl depth.
    pub const CRAWL_DEPTH: &str = "crawl_depth";
    /// Stored only: the headings a link can point at, `level<TAB>id<TAB>text` lines
    /// (`parse_data.metadata["sections"]`).
    pub const SECTIONS: &str = "sections";
}

/// The index's fields, resolved once.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// `url`.
    pub url: Field,
    /// `site`.
    pub site: Field,
    /// `title`.
    pub title: Field,
    /// `anchors`.
    pub anchors: Field,
    /// `main_text`.
    pub main_text: Field,
    /// `other_text`.
    pub other_text: Field,
    /// `url_words`.
    pub url_words: Field,
    /// `lang`.
    pub lang: Field,
    /// `content_type`.
    pub content_type: Field,
    /// `segment`.
    pub segment: Field,
    /// `fetch_time`.
    pub fetch_time: Field,
    /// `pagerank`.
    pub pagerank: Field,
    /// `hostrank`.
    pub hostrank: Field,
    /// `inlinks`.
    pub inlinks: Field,
    /// `url_depth`.
    pub url_depth: Field,
    /// `crawl_depth`.
    pub crawl_depth: Field,
    /// `sections`.
    pub sections: Field,
}

/// The index's schema.
pub fn schema() -> Schema {
    let mut b = SchemaBuilder::new();
    let text = |stored: bool| {
        let opts = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TEXT_ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        if stored { opts.set_stored() } else { opts }
    };
    b.add_text_field(name::URL, STRING | STORED);
    // Fast too: the facet counts of a search (docs/search.md).
    b.add_text_field(name::SITE, STRING | STORED | FAST);
    b.add_text_field(name::TITLE, text(true));
    b.add_text_field(name::ANCHORS, text(true));
    b.add_text_field(name::MAIN_TEXT, text(true));
    b.add_text_field(name::OTHER_TEXT, text(true));
    b.add_text_field(name::URL_WORDS, text(false));
    b.add_text_field(name::LANG, STRING | STORED | FAST);
    b.add_text_field(name::CONTENT_TYPE, STRING | STORED | FAST);
    b.add_text_field(name::SEGMENT, STRING | STORED);
    b.add_date_field(name::FETCH_TIME, INDEXED | STORED | FAST);
    b.add_f64_field(name::PAGERANK, STORED | FAST);
    b.add_f64_field(name::HOSTRANK, STORED | FAST);
    b.add_u64_field(name::INLINKS, STORED | FAST);
    b.add_u64_field(name::URL_DEPTH, STORED | FAST);
    b.add_u64_field(name::CRAWL_DEPTH, STORED | FAST);
    b.add_text_field(name::SECTIONS, STORED);
    b.build()
}

impl Fields {
    /// The text fields a query searches, in the order of [`super::Ranking`]'s
    /// weights: title, anchors, main text, other text, URL words.
    pub fn searched(&self) -> [Field; 5] {
        [
            self.title,
            self.anchors,
            self.main_text,
            self.other_text,
            self.url_words,
        ]
    }

    /// The fields of `schema`; an index built by another version of trawl (a field
    /// missing) is refused with what to do.
    pub fn of(schema: &Schema) -> Result<Fields> {
        let get = |n: &str| {
            schema.get_field(n).map_err(|_| Error::Index {
                message: format!(
                    "the index has no field `{n}`: it was built by another version of trawl; \
                     rebuild it with `index --full`"
                ),
            })
        };
        Ok(Fields {
            url: get(name::URL)?,
            site: get(name::SITE)?,
            title: get(name::TITLE)?,
            anchors: get(name::ANCHORS)?,
            main_text: get(name::MAIN_TEXT)?,
            other_text: get(name::OTHER_TEXT)?,
            url_words: get(name::URL_WORDS)?,
            lang: get(name::LANG)?,
            content_type: get(name::CONTENT_TYPE)?,
            segment: get(name::SEGMENT)?,
            fetch_time: get(name::FETCH_TIME)?,
            pagerank: get(name::PAGERANK)?,
            hostrank: get(name::HOSTRANK)?,
            inlinks: get(name::INLINKS)?,
            url_depth: get(name::URL_DEPTH)?,
            crawl_depth: get(name::CRAWL_DEPTH)?,
            sections: get(name::SECTIONS)?,
        })
    }
}
