//! The sitemap hosts (`WebSpec::sitemaps`): hosts that publish XML sitemaps (plain,
//! gzipped, an index nesting another index, plain text, one over the 50 MB limit, a
//! malformed one) and pages that no link points to, only sitemaps. Off by default so
//! other tests' oracles stay as they are. Every file is described, entry by entry,
//! by a [`SitemapFile`] in the site map, so tests derive their expectations from it.
//!
//! (Not to be confused with `testweb::sitemap`, the oracle "site map" JSON.)

use std::collections::BTreeMap;
use std::io::Write;

use serde::{Deserialize, Serialize};

use super::html::PageBuilder;
use super::model::{GZIP_TYPE, Host, Kind, Resource, TEXT_TYPE, XML_TYPE};
use super::robots::Robots;
use trawl::error::{Error, Result};
use trawl::urls::UrlPolicy;

/// The host whose robots.txt names six sitemaps.
pub const SMAP_HOST: &str = "smap.web.test";
/// The host with no `Sitemap:` line (robots.txt 404) but a `/sitemap.xml` (found only
/// by probing) and a `/blog/sitemap.xml` named nowhere (for `inject --sitemaps`).
pub const SMAP2_HOST: &str = "smap2.web.test";
/// Uncompressed size of `/huge.xml.gz`: over the protocol's 50 MB.
pub const HUGE_BYTES: u64 = 51 * 1024 * 1024 + 4096;

/// One entry of a sitemap file as the generator wrote it, and what a correct parser
/// makes of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapFileEntry {
    /// `<loc>` (or the text line) as written.
    pub loc: String,
    /// `<lastmod>` as written, when valid (W3C datetime).
    pub lastmod: Option<String>,
    /// `<changefreq>` as written, when valid.
    pub changefreq: Option<String>,
    /// `<priority>`, when valid.
    pub priority: Option<f64>,
    /// Whether a correct parser keeps the URL (in scope, well formed, before any
    /// fatal error and within the limits).
    pub accepted: bool,
    /// What is special about the entry (bad value dropped, out of scope, after the
    /// XML error, past the size limit).
    pub note: Option<String>,
}

/// One sitemap file of the web.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapFile {
    /// Its URL.
    pub url: String,
    /// `urlset`, `index` or `text`.
    pub format: String,
    /// Served gzip-compressed (the file itself, `Content-Type: application/gzip`).
    pub gzipped: bool,
    /// Named by a `Sitemap:` line of its host's robots.txt.
    pub in_robots: bool,
    /// Uncompressed size in bytes.
    pub bytes: u64,
    /// URL entries (urlset and text), in file order.
    pub entries: Vec<SitemapFileEntry>,
    /// Child sitemaps of an index, in file order, with whether they are accepted.
    pub children: Vec<SitemapFileEntry>,
    /// The problems a parser must report (kinds: `bad_lastmod`, `bad_priority`,
    /// `bad_url`, `out_of_scope`, `malformed_xml`, `too_large`, ...).
    pub problems: Vec<String>,
}

fn entry(
    loc: &str,
    lastmod: Option<&str>,
    cf: Option<&str>,
    prio: Option<f64>,
) -> SitemapFileEntry {
    SitemapFileEntry {
        loc: loc.to_string(),
        lastmod: lastmod.map(str::to_string),
        changefreq: cf.map(str::to_string),
        priority: prio,
        accepted: true,
        note: None,
    }
}

fn rejected(loc: &str, note: &str) -> SitemapFileEntry {
    SitemapFileEntry {
        accepted: false,
        note: Some(note.to_string()),
        ..entry(loc, None, None, None)
    }
}

fn noted(mut e: SitemapFileEntry, note: &str) -> SitemapFileEntry {
    e.note = Some(note.to_string());
    e
}

/// The XML of one `<url>` entry, fields as given (raw strings, possibly invalid).
fn url_xml(loc: &str, lastmod: Option<&str>, cf: Option<&str>, prio: Option<&str>) -> String {
    let mut s = format!("  <url>\n    <loc>{loc}</loc>\n");
    if let Some(l) = lastmod {
        s.push_str(&format!("    <lastmod>{l}</lastmod>\n"));
    }
    if let Some(c) = cf {
        s.push_str(&format!("    <changefreq>{c}</changefreq>\n"));
    }
    if let Some(p) = prio {
        s.push_str(&format!("    <priority>{p}</priority>\n"));
    }
    s.push_str("  </url>\n");
    s
}

const URLSET_OPEN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
const INDEX_OPEN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";

/// The XML of a urlset whose entries are all valid.
fn urlset(entries: &[SitemapFileEntry]) -> String {
    let mut s = URLSET_OPEN.to_string();
    for e in entries {
        let p = e.priority.map(|p| format!("{p:.1}"));
        s.push_str(&url_xml(
            &e.loc,
            e.lastmod.as_deref(),
            e.changefreq.as_deref(),
            p.as_deref(),
        ));
    }
    s.push_str("</urlset>\n");
    s
}

fn gzip_members(parts: &[&[u8]], repeat_middle: usize) -> Result<Vec<u8>> {
    let gz = |data: &[u8]| -> Result<Vec<u8>> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data)
            .and_then(|_| e.finish())
            .map_err(|e| Error::Net(format!("cannot gzip a test sitemap: {e}")))
    };
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let member = gz(p)?;
        let times = if i == 1 { repeat_middle } else { 1 };
        for _ in 0..times {
            out.extend_from_slice(&member);
        }
    }
    Ok(out)
}

struct Builder<'a> {
    host: &'static str,
    policy: &'a UrlPolicy,
    resources: BTreeMap<String, Resource>,
    files: BTreeMap<String, SitemapFile>,
}

impl Builder<'_> {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.host)
    }

    fn page(&mut self, path: &str, kind: Kind, title: &str, links: &[&str]) -> Result<()> {
        let mut b = PageBuilder::new(title, None, None);
        b.heading(title);
        let list: Vec<(String, String)> = links
            .iter()
            .map(|l| (l.to_string(), l.to_string()))
            .collect();
        b.link_list("Links", &list);
        let (body, hrefs) = b.finish();
        let base = url::Url::parse(&self.url(path)).map_err(|e| Error::Url {
            url: self.url(path),
            reason: e.to_string(),
        })?;
        let outlinks = hrefs
            .iter()
            .filter_map(|h| self.policy.check_relative(&base, h).ok())
            .map(|u| u.to_string())
            .collect();
        let r = Resource {
            outlinks,
            title: Some(title.to_string()),
            ..Resource::new(self.url(path), path.to_string(), kind, 200, body)
        };
        self.resources.insert(path.to_string(), r);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn file(
        &mut self,
        path: &str,
        content_type: &'static str,
        body: Vec<u8>,
        format: &str,
        in_robots: bool,
        bytes: u64,
        entries: Vec<SitemapFileEntry>,
        children: Vec<SitemapFileEntry>,
        problems: &[&str],
    ) {
        let url = self.url(path);
        let mut r = Resource::new(url.clone(), path.to_string(), Kind::Sitemap, 200, body);
        r.content_type = content_type;
        r.note = Some(format!("{format} sitemap"));
        self.resources.insert(path.to_string(), r);
        self.files.insert(
            url.clone(),
            SitemapFile {
                url,
                format: format.to_string(),
                gzipped: content_type == GZIP_TYPE,
                in_robots,
                bytes,
                entries,
                children,
                problems: problems.iter().map(|s| s.to_string()).collect(),
            },
        );
    }
}

/// The sitemap hosts and the description of their sitemap files.
pub fn sitemap_hosts(policy: &UrlPolicy) -> Result<(Vec<Host>, BTreeMap<String, SitemapFile>)> {
    let mut files = BTreeMap::new();
    let mut hosts = Vec::new();
    for host in [smap(policy)?, smap2(policy)?] {
        files.extend(host.1);
        hosts.push(host.0);
    }
    Ok((hosts, files))
}

/// A URL on the sitemap host.
fn smap_url(path: &str) -> String {
    format!("http://{SMAP_HOST}{path}")
}

/// The sitemap host: its pages (orphans only sitemaps name) and the sitemap files
/// robots.txt lists, one helper per kind of file.
fn smap(policy: &UrlPolicy) -> Result<(Host, BTreeMap<String, SitemapFile>)> {
    let mut b = Builder {
        host: SMAP_HOST,
        policy,
        resources: BTreeMap::new(),
        files: BTreeMap::new(),
    };
    b.page("/", Kind::Home, "Home of the sitemap host", &["/p1.html"])?;
    b.page("/p1.html", Kind::Page, "Sitemap host page 1", &["/"])?;
    for k in 1..=8 {
        b.page(
            &format!("/orphan{k}.html"),
            Kind::Orphan,
            &format!("Orphan {k}: only sitemaps name me"),
            &["/"],
        )?;
    }

    smap_urlsets(&mut b)?;
    smap_indexes(&mut b);
    smap_malformed(&mut b);
    smap_text_and_huge(&mut b)?;

    let robots = Robots {
        sitemaps: [
            "/sitemap.xml",
            "/sitemap-news.xml.gz",
            "/sitemap-index.xml",
            "/broken.xml",
            "/sitemap.txt",
            "/huge.xml.gz",
        ]
        .into_iter()
        .map(smap_url)
        .collect(),
        ..Robots::private_disallowed()
    };
    Ok((
        Host {
            name: SMAP_HOST.into(),
            robots,
            resources: b.resources,
        },
        b.files,
    ))
}

/// Sitemaps 1 and 2 of the sitemap host: a plain XML urlset and a gzipped one.
fn smap_urlsets(b: &mut Builder<'_>) -> Result<()> {
    let u = smap_url;

    // 1. Plain XML urlset.
    let e1 = vec![
        entry(&u("/"), Some("2026-01-10"), Some("daily"), Some(1.0)),
        entry(
            &u("/orphan1.html"),
            Some("2026-01-15T10:00:00Z"),
            Some("weekly"),
            Some(0.9),
        ),
        entry(
            &u("/orphan2.html"),
            Some("2025-06-01"),
            Some("monthly"),
            Some(0.3),
        ),
        rejected(
            "http://site0.web.test/",
            "another host: outside the sitemap's scope",
        ),
    ];
    let body = urlset(&e1).into_bytes();
    let n = body.len() as u64;
    b.file(
        "/sitemap.xml",
        XML_TYPE,
        body,
        "urlset",
        true,
        n,
        e1,
        vec![],
        &["out_of_scope"],
    );

    // 2. Gzipped urlset.
    let e2 = vec![entry(
        &u("/orphan3.html"),
        Some("2026-02-01T08:30:00+02:00"),
        Some("hourly"),
        Some(0.7),
    )];
    let xml = urlset(&e2);
    let n = xml.len() as u64;
    let body = gzip_members(&[xml.as_bytes()], 1)?;
    b.file(
        "/sitemap-news.xml.gz",
        GZIP_TYPE,
        body,
        "urlset",
        true,
        n,
        e2,
        vec![],
        &[],
    );
    Ok(())
}

/// Sitemap 3 of the sitemap host: an index naming a nested index naming a urlset.
fn smap_indexes(b: &mut Builder<'_>) {
    let u = smap_url;

    // 3. An index naming a nested index naming a urlset (depth 2), and a sitemap
    //    on another site (rejected).
    let index = format!(
        "{INDEX_OPEN}  <sitemap>\n    <loc>{}</loc>\n    <lastmod>2026-01-20</lastmod>\n  </sitemap>\n  <sitemap>\n    <loc>http://site0.web.test/sitemap.xml</loc>\n  </sitemap>\n</sitemapindex>\n",
        u("/sitemaps/nested-index.xml")
    );
    let n = index.len() as u64;
    b.file(
        "/sitemap-index.xml",
        XML_TYPE,
        index.into_bytes(),
        "index",
        true,
        n,
        vec![],
        vec![
            entry(
                &u("/sitemaps/nested-index.xml"),
                Some("2026-01-20"),
                None,
                None,
            ),
            rejected(
                "http://site0.web.test/sitemap.xml",
                "an index may only name sitemaps on its own site",
            ),
        ],
        &["other_site"],
    );
    let nested = format!(
        "{INDEX_OPEN}  <sitemap>\n    <loc>{}</loc>\n  </sitemap>\n</sitemapindex>\n",
        u("/sitemaps/deep.xml")
    );
    let n = nested.len() as u64;
    b.file(
        "/sitemaps/nested-index.xml",
        XML_TYPE,
        nested.into_bytes(),
        "index",
        false,
        n,
        vec![],
        vec![entry(&u("/sitemaps/deep.xml"), None, None, None)],
        &[],
    );
    // Named through robots.txt (via the indexes), so it may list the whole host.
    let e3 = vec![entry(
        &u("/orphan4.html"),
        Some("2024-12-24T18:00Z"),
        None,
        Some(0.6),
    )];
    let body = urlset(&e3).into_bytes();
    let n = body.len() as u64;
    b.file(
        "/sitemaps/deep.xml",
        XML_TYPE,
        body,
        "urlset",
        false,
        n,
        e3,
        vec![],
        &[],
    );
}

/// Sitemap 4 of the sitemap host: malformed values, then broken XML.
fn smap_malformed(b: &mut Builder<'_>) {
    let u = smap_url;

    // 4. Malformed: bad lastmod, bad priority, bad URL, then broken XML.
    let mut xml = URLSET_OPEN.to_string();
    xml.push_str(&url_xml(
        &u("/orphan5.html"),
        Some("2026-03-01"),
        None,
        Some("0.4"),
    ));
    xml.push_str(&url_xml(&u("/p1.html"), Some("last tuesday"), None, None));
    xml.push_str(&url_xml(
        &u("/orphan6.html"),
        None,
        Some("sometimes"),
        Some("very high"),
    ));
    xml.push_str(&url_xml("http://", None, None, None));
    xml.push_str("  <url>\n    <loc>http://smap.web.test/never1.html</loc>\n  </urlx>\n");
    xml.push_str(&url_xml(&u("/never2.html"), None, None, None));
    xml.push_str("</urlset>\n");
    let e4 = vec![
        entry(&u("/orphan5.html"), Some("2026-03-01"), None, Some(0.4)),
        noted(
            entry(&u("/p1.html"), None, None, None),
            "bad lastmod dropped",
        ),
        noted(
            entry(&u("/orphan6.html"), None, None, None),
            "bad changefreq and priority dropped",
        ),
        rejected("http://", "bad URL"),
        rejected(&u("/never1.html"), "inside the entry where the XML breaks"),
        rejected(&u("/never2.html"), "after the XML error"),
    ];
    let n = xml.len() as u64;
    b.file(
        "/broken.xml",
        XML_TYPE,
        xml.into_bytes(),
        "urlset",
        true,
        n,
        e4,
        vec![],
        &[
            "bad_lastmod",
            "bad_changefreq",
            "bad_priority",
            "bad_url",
            "malformed_xml",
        ],
    );
}

/// Sitemaps 5 and 6 of the sitemap host: plain text, and one over 50 MB.
fn smap_text_and_huge(b: &mut Builder<'_>) -> Result<()> {
    let u = smap_url;

    // 5. Plain text.
    let text = format!("{}\nhttp://elsewhere.web.test/x.html\n", u("/orphan7.html"));
    let n = text.len() as u64;
    b.file(
        "/sitemap.txt",
        TEXT_TYPE,
        text.into_bytes(),
        "text",
        true,
        n,
        vec![
            entry(&u("/orphan7.html"), None, None, None),
            rejected(
                "http://elsewhere.web.test/x.html",
                "another host: outside the sitemap's scope",
            ),
        ],
        vec![],
        &["out_of_scope"],
    );

    // 6. Over 50 MB uncompressed (a few dozen KB compressed): one entry, 51 MiB of
    //    blanks, one more entry past the limit. Served as concatenated gzip members.
    let head = format!(
        "{URLSET_OPEN}{}",
        url_xml(&u("/orphan8.html"), None, None, Some("0.2"))
    );
    let tail = format!(
        "{}</urlset>\n",
        url_xml(&u("/never3.html"), None, None, None)
    );
    let blank = vec![b' '; 1 << 20];
    let padding = HUGE_BYTES as usize - head.len() - tail.len();
    let mib = padding / (1 << 20);
    let rest = vec![b' '; padding - mib * (1 << 20)];
    let mut body = gzip_members(&[head.as_bytes(), &blank], mib)?;
    body.extend(gzip_members(&[&rest, tail.as_bytes()], 1)?);
    b.file(
        "/huge.xml.gz",
        GZIP_TYPE,
        body,
        "urlset",
        true,
        HUGE_BYTES,
        vec![
            entry(&u("/orphan8.html"), None, None, Some(0.2)),
            rejected(&u("/never3.html"), "past the 50 MB limit"),
        ],
        vec![],
        &["too_large"],
    );
    Ok(())
}

fn smap2(policy: &UrlPolicy) -> Result<(Host, BTreeMap<String, SitemapFile>)> {
    let mut b = Builder {
        host: SMAP2_HOST,
        policy,
        resources: BTreeMap::new(),
        files: BTreeMap::new(),
    };
    let u = |p: &str| format!("http://{SMAP2_HOST}{p}");
    b.page("/", Kind::Home, "Home of the second sitemap host", &[])?;
    b.page(
        "/probed.html",
        Kind::Orphan,
        "Found by probing /sitemap.xml",
        &["/"],
    )?;
    b.page("/blog/post1.html", Kind::Orphan, "Blog post 1", &["/"])?;
    b.page(
        "/about.html",
        Kind::Orphan,
        "About (outside the blog sitemap's scope)",
        &["/"],
    )?;
    let e = vec![entry(
        &u("/probed.html"),
        Some("2026-01-01"),
        None,
        Some(0.8),
    )];
    let body = urlset(&e).into_bytes();
    let n = body.len() as u64;
    b.file(
        "/sitemap.xml",
        XML_TYPE,
        body,
        "urlset",
        false,
        n,
        e,
        vec![],
        &[],
    );
    let e = vec![
        entry(
            &u("/blog/post1.html"),
            Some("2025-11-30T12:00:00Z"),
            Some("yearly"),
            Some(0.9),
        ),
        rejected(&u("/about.html"), "outside /blog/: the sitemap's directory"),
    ];
    let body = urlset(&e).into_bytes();
    let n = body.len() as u64;
    b.file(
        "/blog/sitemap.xml",
        XML_TYPE,
        body,
        "urlset",
        false,
        n,
        e,
        vec![],
        &["out_of_scope"],
    );
    Ok((
        Host {
            name: SMAP2_HOST.into(),
            robots: Robots {
                groups: None,
                unavailable: false,
                padding_bytes: 0,
                moved_to: None,
                sitemaps: Vec::new(),
            },
            resources: b.resources,
        },
        b.files,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl::config::UrlConfig;
    use trawl::sitemaps::parse::{self, Context, Limits, Scope};

    /// The real parser agrees with the description of every file.
    #[test]
    fn parser_agrees_with_the_description() {
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        let (hosts, files) = sitemap_hosts(&policy).unwrap();
        assert_eq!(files.len(), 10);
        for f in files.values() {
            let url = url::Url::parse(&f.url).unwrap();
            let host = hosts
                .iter()
                .find(|h| Some(h.name.as_str()) == url.host_str())
                .unwrap();
            let body = &host.resources[url.path()].body;
            // Named by robots.txt or reached through such an index: the whole host.
            let scope = if f.url.contains("smap2") {
                Scope::of_location(&url)
            } else {
                Scope::from_robots(&url, &url.origin().ascii_serialization())
            };
            let ctx = Context {
                sitemap: &url,
                scope: &scope,
                policy: &policy,
                limits: Limits::default(),
            };
            let p = parse::parse(body, &ctx);
            assert_eq!(p.format.as_str(), f.format, "{}", f.url);
            assert_eq!(p.gzipped, f.gzipped, "{}", f.url);
            let want: Vec<&str> = f
                .entries
                .iter()
                .filter(|e| e.accepted)
                .map(|e| e.loc.as_str())
                .collect();
            let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
            assert_eq!(got, want, "{}", f.url);
            for (g, e) in p.urls.iter().zip(f.entries.iter().filter(|e| e.accepted)) {
                assert_eq!(g.priority, e.priority, "{}", e.loc);
                assert_eq!(
                    g.lastmod,
                    e.lastmod.as_deref().and_then(parse::parse_w3c_datetime),
                    "{}",
                    e.loc
                );
            }
            let want: Vec<&str> = f
                .children
                .iter()
                .filter(|e| e.accepted)
                .map(|e| e.loc.as_str())
                .collect();
            let got: Vec<&str> = p.sitemaps.iter().map(|u| u.url.as_str()).collect();
            assert_eq!(got, want, "{}", f.url);
            assert!(
                p.problem_count as usize >= f.problems.len(),
                "{}: {:?}",
                f.url,
                p.problems
            );
            assert_eq!(
                p.problem_count == 0,
                f.problems.is_empty(),
                "{}: {:?}",
                f.url,
                p.problems
            );
            assert_eq!(
                p.too_large,
                f.problems.iter().any(|x| x == "too_large"),
                "{}",
                f.url
            );
            if !p.too_large {
                assert_eq!(p.bytes, f.bytes, "{}", f.url);
            }
        }
    }
}
