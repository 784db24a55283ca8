//! The `parse` stage's library: turns fetched `content` rows into
//! `parse_text`, `parse_data` and `crawl_parse` rows.
//!
//! One page goes through [`page::parse_page`]: charset detection ([`charset`]),
//! one DOM walk ([`html`]), link resolution ([`links`]), robots directives
//! ([`robots_meta`]), main-content extraction ([`maintext`]) and signatures
//! ([`signature`]). PDFs go through [`document`] instead. [`stage`] streams a segment
//! through it.

pub mod boilerplate;
pub mod charset;
pub mod document;
pub mod html;
pub mod links;
pub mod maintext;
pub mod nesting;
pub mod page;
pub mod robots_meta;
pub mod signature;
pub mod stage;
pub mod text;

pub use page::{PageInput, PageOpts, ParsedPage, parse_page};
pub use stage::{ParseOpts, ParseReport, run};
