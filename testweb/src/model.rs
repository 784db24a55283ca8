//! The generated web: hosts and the resources each one serves.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::robots::Robots;
use super::spec::WebSpec;

/// The `Content-Type` of pages, redirects and 404 bodies.
pub const HTML_TYPE: &str = "text/html; charset=utf-8";
/// The `Content-Type` of robots.txt.
pub const TEXT_TYPE: &str = "text/plain; charset=utf-8";
/// The `Content-Type` of XML sitemaps.
pub const XML_TYPE: &str = "application/xml";
/// The `Content-Type` of gzip-compressed sitemaps.
pub const GZIP_TYPE: &str = "application/gzip";

/// What role a resource plays in the web (tests select URLs by kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A host's home page `/`.
    Home,
    /// A regular page `/p{j}.html`.
    Page,
    /// A page under `/private/` (disallowed for `*` on some hosts).
    Private,
    /// A page under `/other/` (disallowed only for the agent `otherbot` on some hosts).
    Other,
    /// A page linked only from private pages.
    Hidden,
    /// An exact copy of another page (`/copy{j}.html`).
    Copy,
    /// A redirect (`/old{j}` answers 301, `/moved{j}` answers 302).
    Redirect,
    /// A linked URL that does not exist (404).
    Missing,
    /// A resource of the hostile hosts (`--hostile`): see its `behavior` and `note`.
    Hostile,
    /// An XML or text sitemap file of the sitemap hosts (`--sitemaps`).
    Sitemap,
    /// A page of the sitemap hosts no link points to: only sitemaps name it.
    Orphan,
    /// A document of the document host (`--documents`): a PDF.
    Document,
    /// A script or the data a script fetches, of the scripted hosts (`--scripted`).
    Script,
}

/// How the server delivers a response beyond its status, headers and body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Behavior {
    /// Everything at once.
    #[default]
    Normal,
    /// Waits `ms` milliseconds before sending the response head.
    Delay {
        /// The delay.
        ms: u64,
    },
    /// Sends the head (with `Content-Length`) at once, then the body in `chunks`
    /// pieces, `interval_ms` apart.
    SlowBody {
        /// Number of body pieces.
        chunks: u32,
        /// Pause between pieces.
        interval_ms: u64,
    },
    /// Sends the head (no `Content-Length`, chunked) and then a few bytes every
    /// `interval_ms`, forever: the response never completes.
    Endless {
        /// Pause between pieces.
        interval_ms: u64,
    },
    /// Closes the connection without any response.
    Reset,
    /// Serves `Last-Modified` and `ETag`, and answers 304 (no body) to a request whose
    /// `If-None-Match` equals the ETag or whose `If-Modified-Since` is not earlier than
    /// `Last-Modified`.
    Conditional,
}

/// One URL of the web and exactly what the server answers for it.
#[derive(Debug, Clone)]
pub struct Resource {
    /// The normalized absolute URL (port-less).
    pub url: String,
    /// The request path the server routes on.
    pub path: String,
    /// Its role.
    pub kind: Kind,
    /// HTTP status (200, 301, 302 or 404).
    pub status: u16,
    /// `Content-Type` header.
    pub content_type: &'static str,
    /// The body bytes served.
    pub body: Vec<u8>,
    /// The raw `Location` header of a redirect (may be relative).
    pub location: Option<String>,
    /// The redirect target, resolved and normalized.
    pub redirect: Option<String>,
    /// The page's links, resolved and normalized like trawl's parser must, in document
    /// order, deduplicated (first occurrence kept).
    pub outlinks: Vec<String>,
    /// The page's `<title>`.
    pub title: Option<String>,
    /// For a copy: the URL of the page whose body it repeats byte for byte.
    pub duplicate_of: Option<String>,
    /// The page carries `<meta name="robots" content="nofollow">`.
    pub nofollow: bool,
    /// The page carries `<meta name="robots" content="noindex">`.
    pub noindex: bool,
    /// How many generations (`WebSpec::generation`) changed the page's content.
    pub revision: u32,
    /// How the response is delivered.
    pub behavior: Behavior,
    /// Extra response headers (`Retry-After`, `Content-Encoding`, `ETag`, ...).
    pub headers: Vec<(String, String)>,
    /// What this resource tests, for hostile resources.
    pub note: Option<String>,
}

impl Resource {
    /// An HTML resource with no links, redirect, flags or extra headers, delivered
    /// normally: the base every resource of the generator starts from.
    pub fn new(url: String, path: String, kind: Kind, status: u16, body: Vec<u8>) -> Resource {
        Resource {
            url,
            path,
            kind,
            status,
            content_type: HTML_TYPE,
            body,
            location: None,
            redirect: None,
            outlinks: Vec::new(),
            title: None,
            duplicate_of: None,
            nofollow: false,
            noindex: false,
            revision: 0,
            behavior: Behavior::Normal,
            headers: Vec::new(),
            note: None,
        }
    }
}

/// One host of the web.
#[derive(Debug, Clone)]
pub struct Host {
    /// Host name, `site{i}.web.test`.
    pub name: String,
    /// Its robots.txt.
    pub robots: Robots,
    /// Every URL of the host that the site map knows, by path.
    pub resources: BTreeMap<String, Resource>,
}

/// A whole generated web.
#[derive(Debug, Clone)]
pub struct Web {
    /// The spec it was generated from.
    pub spec: WebSpec,
    /// The hosts, in index order.
    pub hosts: Vec<Host>,
    /// The seed URLs (home pages of the first `spec.seed_count` hosts).
    pub seeds: Vec<String>,
    /// The sitemap files the web publishes (`spec.sitemaps`), by URL.
    pub sitemaps: std::collections::BTreeMap<String, super::xmlsitemaps::SitemapFile>,
}

impl Web {
    /// The host named `name` (case-insensitive), if any.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
    }

    /// The resource at `url` (a normalized absolute URL), if the web knows it.
    pub fn resource(&self, url: &str) -> Option<&Resource> {
        let u = url::Url::parse(url).ok()?;
        self.host(u.host_str()?)?.resources.get(u.path())
    }

    /// Every resource, host by host, in path order.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.hosts.iter().flat_map(|h| h.resources.values())
    }
}

/// The body served for unknown paths, unknown hosts and missing pages.
pub fn not_found_body() -> Vec<u8> {
    b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n".to_vec()
}

/// The body of a redirect response.
pub fn redirect_body(status: u16) -> Vec<u8> {
    let reason = if status == 301 {
        "Moved Permanently"
    } else {
        "Found"
    };
    format!(
        "<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head><body><h1>{reason}</h1></body></html>\n"
    )
    .into_bytes()
}
