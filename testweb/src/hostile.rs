//! The hostile hosts (`WebSpec::hostile`): slow, endless, failing, looping, oversized
//! and conditional responses, and robots.txt variants. Off by default so the basic web
//! stays simple; every resource is in the site map with its `behavior` and a `note`.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;

use url::Url;

use super::html::PageBuilder;
use super::model::{Behavior, Host, Kind, Resource};
use super::robots::{Robots, RobotsGroup};
use trawl::error::{Error, IoContext, Result};
use trawl::urls::UrlPolicy;

/// The host of slow, failing and oversized responses.
pub const HOSTILE_HOST: &str = "hostile.web.test";
/// A host whose robots.txt answers 500 (everything counts as disallowed).
pub const ROBOTS_500_HOST: &str = "robots500.web.test";
/// A host whose robots.txt is over 500 KiB (rules first, then comments).
pub const ROBOTS_BIG_HOST: &str = "robotsbig.web.test";
/// A host whose robots.txt redirects (301) to `/robots-real.txt`.
pub const ROBOTS_MOVED_HOST: &str = "robotsmoved.web.test";
/// Decompressed size of `/bomb.html` (served gzip-compressed).
pub const BOMB_BYTES: usize = 32 << 20;
/// Size of `/big.html`.
pub const BIG_BYTES: usize = 6 << 20;
/// `Last-Modified` of `/cond.html`.
pub const LAST_MODIFIED: &str = "Mon, 02 Jan 2023 03:04:05 GMT";
/// `ETag` of `/cond.html`.
pub const ETAG: &str = "\"cond-v1\"";

/// The hostile hosts.
pub fn hostile_hosts(policy: &UrlPolicy) -> Result<Vec<Host>> {
    Ok(vec![
        hostile(policy)?,
        robots_host(policy, ROBOTS_500_HOST, |r| r.unavailable = true)?,
        robots_host(policy, ROBOTS_BIG_HOST, |r| r.padding_bytes = 600 * 1024)?,
        robots_host(policy, ROBOTS_MOVED_HOST, |r| {
            r.moved_to = Some("/robots-real.txt".into());
            // `/private/` written with `p` percent-encoded (RFC 9309 2.2.2: the same rule).
            if let Some(g) = r.groups.as_mut().and_then(|g| g.first_mut()) {
                g.disallow = vec!["/%70rivate/".into()];
            }
        })?,
    ])
}

struct Builder<'a> {
    host: &'static str,
    policy: &'a UrlPolicy,
    resources: BTreeMap<String, Resource>,
}

impl Builder<'_> {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.host)
    }

    fn add(&mut self, path: &str, status: u16, body: Vec<u8>, note: &str) -> &mut Resource {
        let res = Resource {
            note: Some(note.to_string()),
            ..Resource::new(
                self.url(path),
                path.to_string(),
                Kind::Hostile,
                status,
                body,
            )
        };
        match self.resources.entry(path.to_string()) {
            Entry::Vacant(v) => v.insert(res),
            Entry::Occupied(mut o) => {
                o.insert(res);
                o.into_mut()
            }
        }
    }

    /// A 200 page titled `title` linking (root-relative) to `links`.
    fn page(
        &mut self,
        path: &str,
        title: &str,
        links: &[&str],
        note: &str,
    ) -> Result<&mut Resource> {
        let mut b = PageBuilder::new(title, None, None);
        b.heading(title);
        let list: Vec<(String, String)> = links
            .iter()
            .map(|l| (l.to_string(), l.to_string()))
            .collect();
        b.link_list("Links", &list);
        let (body, hrefs) = b.finish();
        let outlinks = self.resolve(path, &hrefs)?;
        let r = self.add(path, 200, body, note);
        r.title = Some(title.to_string());
        r.outlinks = outlinks;
        Ok(r)
    }

    fn resolve(&self, path: &str, hrefs: &[String]) -> Result<Vec<String>> {
        let base = Url::parse(&self.url(path)).map_err(|e| Error::Url {
            url: self.url(path),
            reason: e.to_string(),
        })?;
        let mut seen = HashSet::new();
        Ok(hrefs
            .iter()
            .filter_map(|h| self.policy.check_relative(&base, h).ok())
            .map(|u| u.to_string())
            .filter(|u| seen.insert(u.clone()))
            .collect())
    }

    /// A redirect from `path` to `to` (root-relative, or an absolute URL on another host).
    fn redirect(&mut self, path: &str, status: u16, to: &str, note: &str) {
        let target = if to.starts_with('/') {
            self.url(to)
        } else {
            to.to_string()
        };
        let r = self.add(path, status, super::model::redirect_body(status), note);
        r.location = Some(to.to_string());
        r.redirect = Some(target);
    }
}

fn error_body(status: u16) -> Vec<u8> {
    format!("<!DOCTYPE html>\n<html><head><title>{status}</title></head><body><h1>Error {status}</h1></body></html>\n")
        .into_bytes()
}

/// The hostile host: its home page links to every hostile resource, added by kind.
fn hostile(policy: &UrlPolicy) -> Result<Host> {
    let mut b = Builder {
        host: HOSTILE_HOST,
        policy,
        resources: BTreeMap::new(),
    };
    let all = [
        "/slow.html",
        "/slow-body.html",
        "/endless.html",
        "/reset",
        "/error500",
        "/unavailable",
        "/ratelimited",
        "/chain1",
        "/loop-a",
        "/bomb.html",
        "/big.html",
        "/huge-header.html",
        "/cond.html",
        "/script.cgi",
        "/script.cgi.html",
        "/tmp/secret.html",
        "/tmp/ok.html",
    ];
    b.page("/", "Hostile home", &all, "links to every hostile resource")?;
    slow_and_failing(&mut b)?;
    redirects(&mut b)?;
    oversized(&mut b)?;
    robots_rules(&mut b)?;

    let robots = Robots {
        groups: Some(vec![
            RobotsGroup {
                agents: vec!["otherbot".into()],
                disallow: vec!["/".into()],
                allow: Vec::new(),
                crawl_delay: None,
            },
            RobotsGroup {
                agents: vec!["*".into()],
                disallow: vec!["/*.cgi$".into(), "/tmp".into()],
                allow: vec!["/tmp/ok".into()],
                crawl_delay: Some(2),
            },
        ]),
        unavailable: false,
        padding_bytes: 0,
        moved_to: None,
        sitemaps: Vec::new(),
    };
    Ok(Host {
        name: HOSTILE_HOST.into(),
        robots,
        resources: b.resources,
    })
}

/// Slow, endless, reset and failing (500, 503, 429) responses.
fn slow_and_failing(b: &mut Builder<'_>) -> Result<()> {
    b.page(
        "/slow.html",
        "Slow page",
        &["/"],
        "waits 3 s before the response head",
    )?
    .behavior = Behavior::Delay { ms: 3000 };
    b.page(
        "/slow-body.html",
        "Slow body",
        &["/final.html"],
        "body in 4 pieces 1 s apart",
    )?
    .behavior = Behavior::SlowBody {
        chunks: 4,
        interval_ms: 1000,
    };
    b.add(
        "/endless.html",
        200,
        Vec::new(),
        "head at once, then 16 bytes every 200 ms forever; never completes (body_bytes 0: unbounded)",
    )
    .behavior = Behavior::Endless { interval_ms: 200 };
    b.add(
        "/reset",
        0,
        Vec::new(),
        "connection closed without a response (status 0)",
    )
    .behavior = Behavior::Reset;
    b.add("/error500", 500, error_body(500), "server error");
    b.add(
        "/unavailable",
        503,
        error_body(503),
        "unavailable, Retry-After: 5",
    )
    .headers
    .push(("retry-after".into(), "5".into()));
    b.add(
        "/ratelimited",
        429,
        error_body(429),
        "too many requests, Retry-After: 10",
    )
    .headers
    .push(("retry-after".into(), "10".into()));
    Ok(())
}

/// A redirect chain of 5 hops and a redirect loop.
fn redirects(b: &mut Builder<'_>) -> Result<()> {
    for k in 1..=5 {
        let to = if k == 5 {
            "/final.html".to_string()
        } else {
            format!("/chain{}", k + 1)
        };
        b.redirect(
            &format!("/chain{k}"),
            301,
            &to,
            "redirect chain of 5 hops to /final.html",
        );
    }
    b.page(
        "/final.html",
        "End of the chain",
        &["/"],
        "target of the redirect chain",
    )?;
    b.redirect(
        "/loop-a",
        302,
        "/loop-b",
        "redirect loop /loop-a <-> /loop-b",
    );
    b.redirect(
        "/loop-b",
        302,
        "/loop-a",
        "redirect loop /loop-a <-> /loop-b",
    );
    Ok(())
}

/// A gzip bomb, a page over the size limit and a huge header.
fn oversized(b: &mut Builder<'_>) -> Result<()> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 16];
    for _ in 0..BOMB_BYTES / chunk.len() {
        gz.write_all(&chunk).at("gzip bomb")?;
    }
    let bomb = gz.finish().at("gzip bomb")?;
    b.add(
        "/bomb.html",
        200,
        bomb,
        "gzip bomb: Content-Encoding gzip, decompresses to 32 MiB of spaces",
    )
    .headers
    .push(("content-encoding".into(), "gzip".into()));

    let mut big = String::from(
        "<!DOCTYPE html>\n<html><head><title>Big page</title></head><body>\n<a href=\"/\">home</a>\n",
    );
    let para = "<p>river stone garden winter copper signal harbor lantern meadow engine forest marble</p>\n";
    while big.len() + para.len() < BIG_BYTES - 200 {
        big.push_str(para);
    }
    big.push_str("<a href=\"/final.html\">the end</a>\n</body></html>\n");
    let outlinks = b.resolve("/big.html", &["/".into(), "/final.html".into()])?;
    let r = b.add(
        "/big.html",
        200,
        big.into_bytes(),
        "6 MiB page (over fetch.max_content_bytes); its second link is at the very end",
    );
    r.title = Some("Big page".into());
    r.outlinks = outlinks;

    b.page(
        "/huge-header.html",
        "Huge header",
        &["/"],
        "response carries a 60 KB X-Filler header",
    )?
    .headers
    .push(("x-filler".into(), "a".repeat(60_000)));
    Ok(())
}

/// A conditional page and the pages robots.txt rules allow or disallow.
fn robots_rules(b: &mut Builder<'_>) -> Result<()> {
    let r = b.page(
        "/cond.html",
        "Conditional page",
        &["/"],
        "answers 304 to If-None-Match: \"cond-v1\" or If-Modified-Since >= Last-Modified",
    )?;
    r.behavior = Behavior::Conditional;
    r.headers.push(("etag".into(), ETAG.into()));
    r.headers
        .push(("last-modified".into(), LAST_MODIFIED.into()));
    b.page(
        "/script.cgi",
        "Script",
        &["/"],
        "disallowed by Disallow: /*.cgi$",
    )?;
    b.page(
        "/script.cgi.html",
        "Not a script",
        &["/"],
        "allowed: /*.cgi$ is anchored",
    )?;
    b.page(
        "/tmp/secret.html",
        "Temp secret",
        &["/"],
        "disallowed by Disallow: /tmp",
    )?;
    b.page(
        "/tmp/ok.html",
        "Temp ok",
        &["/"],
        "allowed by the longer Allow: /tmp/ok",
    )?;
    Ok(())
}

/// A small host testing one robots.txt variant: `/` links to `/p1.html` and
/// `/private/s1.html`; the robots.txt disallows `/private/` for `*`.
fn robots_host(
    policy: &UrlPolicy,
    host: &'static str,
    variant: impl FnOnce(&mut Robots),
) -> Result<Host> {
    let mut b = Builder {
        host,
        policy,
        resources: BTreeMap::new(),
    };
    let note = "robots.txt variant host";
    b.page(
        "/",
        &format!("Home of {host}"),
        &["/p1.html", "/private/s1.html"],
        note,
    )?;
    b.page("/p1.html", "Page 1", &["/"], note)?;
    b.page("/private/s1.html", "Private", &["/"], note)?;
    if host == ROBOTS_MOVED_HOST {
        b.redirect(
            "/to-hostile",
            302,
            &format!("http://{HOSTILE_HOST}/final.html"),
            "cross-host redirect to the hostile host (Crawl-delay 2 s); no page links here",
        );
    }
    let mut robots = Robots::private_disallowed();
    variant(&mut robots);
    Ok(Host {
        name: host.into(),
        robots,
        resources: b.resources,
    })
}

#[cfg(test)]
mod tests {
    use crate::{Kind, WebSpec, generate};

    fn map() -> crate::SiteMap {
        generate(&WebSpec {
            hosts: 2,
            pages_per_host: 5,
            hostile: true,
            ..WebSpec::default()
        })
        .unwrap()
        .site_map()
    }

    #[test]
    fn robots_verdicts_match_the_fetcher() {
        let m = map();
        for (host, h) in &m.hosts {
            let Some(text) = &h.robots_txt else { continue };
            let r = trawl::net::robots::Robots::parse("trawl", text.as_bytes());
            for (url, e) in m.urls.iter().filter(|(u, _)| u.contains(host.as_str())) {
                assert_eq!(r.allowed(url), !e.disallowed, "{url}");
            }
        }
        let h = "http://hostile.web.test";
        assert!(m.urls[&format!("{h}/script.cgi")].disallowed);
        assert!(!m.urls[&format!("{h}/script.cgi.html")].disallowed);
        assert!(m.urls[&format!("{h}/tmp/secret.html")].disallowed);
        assert!(!m.urls[&format!("{h}/tmp/ok.html")].disallowed);
        assert!(m.urls["http://robots500.web.test/"].disallowed);
        assert_eq!(m.hosts["robots500.web.test"].robots_status, 500);
        assert_eq!(m.hosts["robotsmoved.web.test"].robots_status, 301);
        assert!(
            m.hosts["robotsmoved.web.test"]
                .robots_txt
                .as_ref()
                .unwrap()
                .contains("Disallow: /%70rivate/\n")
        );
        assert!(m.urls["http://robotsmoved.web.test/private/s1.html"].disallowed);
        assert!(
            m.hosts["robotsbig.web.test"]
                .robots_txt
                .as_ref()
                .unwrap()
                .len()
                > 500 * 1024
        );
        assert_eq!(
            m.hosts["hostile.web.test"].robots_groups[1].crawl_delay,
            Some(2)
        );
    }

    #[test]
    fn hostile_seeds_and_reachability() {
        let m = map();
        assert!(m.seeds.contains(&"http://hostile.web.test/".to_string()));
        assert_eq!(m.seeds.len(), 2 + 4);
        let r = m.reachable(&m.seeds, None);
        let h = |p: &str| format!("http://hostile.web.test{p}");
        assert_eq!(r[&h("/chain1")], 1);
        assert_eq!(r[&h("/chain5")], 5);
        assert_eq!(r[&h("/final.html")], 2); // also linked from /slow-body.html
        assert_eq!(r[&h("/loop-b")], 2);
        // robots500: the seed is known but nothing behind it.
        assert!(!r.contains_key("http://robots500.web.test/p1.html"));
        assert!(r.contains_key("http://robotsbig.web.test/p1.html"));
        assert!(m.urls.values().filter(|e| e.kind == Kind::Hostile).count() > 20);
    }
}
