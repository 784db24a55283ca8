//! The generator's parameters.

use serde::{Deserialize, Serialize};

/// The domain every test host is under.
pub const DOMAIN: &str = "web.test";

/// The host pattern for `fetch.resolve` that sends every test host to the server:
/// `[fetch.resolve] "*.web.test" = "<ip:port>"`.
pub const RESOLVE_PATTERN: &str = "*.web.test";

/// What web to generate. The same spec always yields the same web, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSpec {
    /// PRNG seed.
    pub seed: u64,
    /// Number of hosts, named `site0.web.test`, `site1.web.test`, ...
    pub hosts: usize,
    /// Regular pages per host: the home page `/` plus `/p1.html` .. `/p{pages-1}.html`
    /// (at least 1). Special resources (private pages, copies, redirects, 404s) come on top.
    pub pages_per_host: usize,
    /// Number of seeds: the home pages of the first `seed_count` hosts.
    pub seed_count: usize,
    /// Fewest random links on a regular page (on top of navigation and chain links).
    pub min_links: usize,
    /// Most random links on a regular page.
    pub max_links: usize,
    /// Add the hostile hosts (slow, endless, failing, looping, oversized responses and
    /// robots.txt variants; see `testweb::hostile`), and their home pages to the seeds.
    pub hostile: bool,
    /// Which round of the web to produce. Generation 0 is the base web; in later
    /// generations some regular pages change content (a "Revision N" paragraph, 30%
    /// chance per page per generation), and a few are removed (404 or 410) or turned
    /// into 301 redirects to their host's home page from a generation on (1, 2 or 3).
    /// Links never change, so removed pages stay linked.
    pub generation: u32,
    /// Add the sitemap hosts (`smap.web.test`, `smap2.web.test`; see
    /// `testweb::xmlsitemaps`): XML, gzipped, index, text, oversized and malformed
    /// sitemaps, and pages only sitemaps name; their home pages join the seeds.
    pub sitemaps: bool,
    /// Add the document host (`docs.web.test`; see `testweb::documents`): PDFs with
    /// text and links, a PDF served as `text/html`, and broken, huge, slow and bomb
    /// PDFs; its home page joins the seeds.
    pub documents: bool,
    /// Add the scripted hosts (`app.web.test`, `app-plain.web.test`, and the
    /// third-party `cdn.web.test` and `ads.web.test`; see `testweb::scripted`): pages
    /// whose links and text exist only after their scripts ran; the two application
    /// home pages join the seeds.
    pub scripted: bool,
}

impl Default for WebSpec {
    fn default() -> Self {
        WebSpec {
            seed: 1,
            hosts: 5,
            pages_per_host: 20,
            seed_count: 2,
            min_links: 4,
            max_links: 10,
            hostile: false,
            generation: 0,
            sitemaps: false,
            documents: false,
            scripted: false,
        }
    }
}

impl WebSpec {
    /// The name of host `i`.
    pub fn host_name(i: usize) -> String {
        format!("site{i}.{DOMAIN}")
    }
}
