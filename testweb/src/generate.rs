//! The deterministic generator: [`WebSpec`] -> [`Web`].
//!
//! Every host gets the same kinds of resources (home, regular pages, private and
//! other-agent pages, a hidden page, a copy, two redirects, two missing pages); which
//! pages link where, the text and the link spellings come from per-host and per-page
//! PRNG streams, so the output depends on the spec alone.

use std::collections::{BTreeMap, HashSet};

use url::Url;

use super::html::{PageBuilder, Piece};
use super::links::href_for;
use super::model::{Host, Kind, Resource, Web, not_found_body, redirect_body};
use super::rng::{Rng, Zipf};
use super::robots::Robots;
use super::spec::WebSpec;
use super::vocab::{phrase, text_zipf, words};
use trawl::config::UrlConfig;
use trawl::error::{Error, Result};
use trawl::urls::UrlPolicy;

/// Generates the web described by `spec`.
pub fn generate(spec: &WebSpec) -> Result<Web> {
    if spec.hosts == 0 || spec.pages_per_host == 0 {
        return Err(Error::input(
            "testweb spec",
            "hosts and pages per host must both be at least 1",
        ));
    }
    if spec.min_links > spec.max_links {
        return Err(Error::input(
            "testweb spec",
            format!(
                "min_links ({}) is above max_links ({})",
                spec.min_links, spec.max_links
            ),
        ));
    }
    let policy = UrlPolicy::new(&UrlConfig::default(), &[])?;
    let mut hosts = (0..spec.hosts)
        .map(|i| HostGen::new(spec, i, &policy).build())
        .collect::<Result<Vec<_>>>()?;
    let mut seeds: Vec<String> = (0..spec.seed_count.min(spec.hosts))
        .map(|i| format!("http://{}/", WebSpec::host_name(i)))
        .collect();
    if spec.hostile {
        let extra = super::hostile::hostile_hosts(&policy)?;
        seeds.extend(extra.iter().map(|h| format!("http://{}/", h.name)));
        hosts.extend(extra);
    }
    let mut sitemaps = std::collections::BTreeMap::new();
    if spec.sitemaps {
        let (extra, files) = super::xmlsitemaps::sitemap_hosts(&policy)?;
        seeds.extend(extra.iter().map(|h| format!("http://{}/", h.name)));
        hosts.extend(extra);
        sitemaps = files;
    }
    if spec.scripted {
        let extra = super::scripted::scripted_hosts();
        seeds.extend(
            super::scripted::APP_HOSTS
                .iter()
                .map(|h| format!("http://{h}/")),
        );
        hosts.extend(extra);
    }
    if spec.documents {
        let host = super::documents::docs_host();
        seeds.push(format!("http://{}/", host.name));
        hosts.push(host);
    }
    Ok(Web {
        spec: spec.clone(),
        hosts,
        seeds,
        sitemaps,
    })
}

/// The path of regular page `j` (0 is the home page).
fn page_path(j: usize) -> String {
    if j == 0 {
        "/".to_string()
    } else {
        format!("/p{j}.html")
    }
}

/// An `href` for `target` as written on a page whose base URL is `base`.
fn href_to(rng: &mut Rng, base: &Url, target: &str) -> Result<String> {
    Ok(href_for(rng, base, &parse(target)?))
}

fn parse(url: &str) -> Result<Url> {
    Url::parse(url).map_err(|e| Error::Url {
        url: url.to_string(),
        reason: e.to_string(),
    })
}

/// A page's HTML before it becomes a resource.
struct Draft {
    body: Vec<u8>,
    hrefs: Vec<String>,
    base_href: Option<String>,
    title: String,
    nofollow: bool,
    noindex: bool,
    revision: u32,
}

/// What becomes of a regular page in later generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Stays (its content may still change).
    Stay,
    /// From generation `at` on, answers `status` (404 or 410).
    Remove { at: u32, status: u16 },
    /// From generation `at` on, answers 301 to the home page.
    Redirect { at: u32 },
}

/// Links as (target URL or path, anchor text).
type Links = Vec<(String, String)>;

/// A host's special pages, drawn once per host.
struct Picks {
    /// The regular page `/copy{copy_src}.html` copies.
    copy_src: usize,
    /// The regular page `/old{old_target}` redirects to (301).
    old_target: usize,
    /// The regular page `/moved{moved_target}` redirects to (302).
    moved_target: usize,
    /// The regular page marked nofollow, if any.
    nofollow_page: Option<usize>,
    /// The regular page marked noindex, if any.
    noindex_page: Option<usize>,
}

impl Picks {
    fn copy_path(&self) -> String {
        format!("/copy{}.html", self.copy_src)
    }

    fn old_path(&self) -> String {
        format!("/old{}", self.old_target)
    }

    fn moved_path(&self) -> String {
        format!("/moved{}", self.moved_target)
    }
}

struct HostGen<'a> {
    spec: &'a WebSpec,
    i: usize,
    name: String,
    policy: &'a UrlPolicy,
    zipf: Zipf,
    /// Skew of cross-host links: low-numbered hosts are linked most, so the web has
    /// clear global hubs (site0's home page first), as the real web does.
    hosts_zipf: Zipf,
    text: Zipf,
}

impl<'a> HostGen<'a> {
    fn new(spec: &'a WebSpec, i: usize, policy: &'a UrlPolicy) -> Self {
        HostGen {
            spec,
            i,
            name: WebSpec::host_name(i),
            policy,
            zipf: Zipf::new(spec.pages_per_host, 1.1),
            hosts_zipf: Zipf::new(spec.hosts.saturating_sub(1), 1.0),
            text: text_zipf(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.name)
    }

    fn build(&self) -> Result<Host> {
        let p = self.spec.pages_per_host;
        let mut rng = Rng::derive(self.spec.seed, "host", self.i as u64);
        let picks = Picks {
            copy_src: rng.below(p),
            old_target: rng.below(p),
            moved_target: rng.below(p),
            nofollow_page: (self.i.is_multiple_of(3) && p >= 3).then(|| p - 1),
            noindex_page: (self.i % 3 == 1 && p >= 3).then(|| p - 1),
        };
        let (placed, on_private) = self.place_specials(&mut rng, &picks);
        let mut resources = BTreeMap::new();
        let drafts = self.regular_pages(&picks, &placed, &mut resources)?;
        // The copy: the same bytes under another URL.
        let copy_doc = parse(&self.url(&picks.copy_path()))?;
        let original = self.url(&page_path(picks.copy_src));
        resources.insert(
            picks.copy_path(),
            self.page_resource(
                &copy_doc,
                Kind::Copy,
                &drafts[picks.copy_src],
                Some(original),
            )?,
        );
        self.small_pages(&mut rng, &on_private, &mut resources)?;
        self.redirects_and_missing(&picks, &mut resources)?;
        Ok(Host {
            name: self.name.clone(),
            robots: Robots::for_host(self.i),
            resources,
        })
    }

    /// Which regular page carries which special link (never the nofollow page, and
    /// the copy's source never links to its copy, which would be a self link there);
    /// the links no page may carry go on the first private page.
    fn place_specials(&self, rng: &mut Rng, picks: &Picks) -> (Vec<Links>, Links) {
        let p = self.spec.pages_per_host;
        let copy_path = picks.copy_path();
        let specials: Vec<(String, &str)> = vec![
            (copy_path.clone(), "a copy"),
            (picks.old_path(), "the old address"),
            (picks.moved_path(), "moved page"),
            ("/missing1.html".into(), "a lost page"),
            ("/missing2.html".into(), "gone"),
            ("/private/s1.html".into(), "members area"),
            ("/other/o1.html".into(), "other corner"),
        ];
        let mut placed: Vec<Links> = vec![Vec::new(); p];
        let mut on_private: Links = Vec::new();
        for (path, anchor) in &specials {
            let banned = |j: usize| {
                Some(j) == picks.nofollow_page || (*path == copy_path && j == picks.copy_src)
            };
            let start = rng.below(p);
            match (0..p).map(|k| (start + k) % p).find(|&j| !banned(j)) {
                Some(j) => placed[j].push((path.clone(), anchor.to_string())),
                None => on_private.push((path.clone(), anchor.to_string())),
            }
        }
        (placed, on_private)
    }

    /// The regular pages (`placed[j]`: page `j`'s special links) as they are in the
    /// spec's generation; returns their drafts (the copy reuses one).
    fn regular_pages(
        &self,
        picks: &Picks,
        placed: &[Links],
        resources: &mut BTreeMap<String, Resource>,
    ) -> Result<Vec<Draft>> {
        let h = self.spec.hosts;
        let mut drafts = Vec::with_capacity(placed.len());
        for (j, extra) in placed.iter().enumerate() {
            let path = page_path(j);
            let doc = parse(&self.url(&path))?;
            let base_href = match j % 7 {
                3 if h > 1 => Some(format!("http://{}/", WebSpec::host_name((self.i + 1) % h))),
                5 => Some(format!("http://{}/other/", self.name)),
                _ => None,
            };
            let draft = self.regular_page(
                j,
                &doc,
                base_href,
                extra,
                Some(j) == picks.nofollow_page,
                Some(j) == picks.noindex_page,
            )?;
            let kind = if j == 0 { Kind::Home } else { Kind::Page };
            let exempt = [0, picks.copy_src, picks.old_target, picks.moved_target].contains(&j);
            let fate = if exempt { Fate::Stay } else { self.fate(j) };
            let g = self.spec.generation;
            let resource = match fate {
                Fate::Remove { at, status } if g >= at => self.gone(&doc, kind, status, None)?,
                Fate::Redirect { at } if g >= at => {
                    self.gone(&doc, kind, 301, Some(self.url("/")))?
                }
                _ => self.page_resource(&doc, kind, &draft, None)?,
            };
            resources.insert(path.clone(), resource);
            drafts.push(draft);
        }
        Ok(drafts)
    }

    /// Private, other-agent and hidden pages (`on_private`: special links no regular
    /// page carries).
    fn small_pages(
        &self,
        rng: &mut Rng,
        on_private: &[(String, String)],
        resources: &mut BTreeMap<String, Resource>,
    ) -> Result<()> {
        let p = self.spec.pages_per_host;
        for k in 1..=2 {
            let path = format!("/private/s{k}.html");
            let doc = parse(&self.url(&path))?;
            let mut links = vec![
                (self.url("/"), "home".to_string()),
                (
                    self.url(&page_path(rng.below(p))),
                    "back to the pages".to_string(),
                ),
                (self.url("/hidden1.html"), "the hidden page".to_string()),
            ];
            if k == 1 {
                links.push((self.url("/private/s2.html"), "more private".to_string()));
                links.extend(on_private.iter().map(|(pa, a)| (self.url(pa), a.clone())));
            }
            let draft = self.small_page(&doc, &format!("Private {k} of {}", self.name), &links)?;
            resources.insert(path, self.page_resource(&doc, Kind::Private, &draft, None)?);
        }
        for (path, kind, title) in [
            ("/other/o1.html", Kind::Other, "Other corner"),
            ("/hidden1.html", Kind::Hidden, "Hidden page"),
        ] {
            let doc = parse(&self.url(path))?;
            let links = vec![
                (self.url("/"), "home".to_string()),
                (self.url(&page_path(rng.below(p))), "a page".to_string()),
            ];
            let draft = self.small_page(&doc, &format!("{title} of {}", self.name), &links)?;
            resources.insert(
                path.to_string(),
                self.page_resource(&doc, kind, &draft, None)?,
            );
        }
        Ok(())
    }

    /// The two redirects and the two missing pages.
    fn redirects_and_missing(
        &self,
        picks: &Picks,
        resources: &mut BTreeMap<String, Resource>,
    ) -> Result<()> {
        // Redirects: absolute Location for 301, root-relative for 302.
        for (path, status, location) in [
            (
                picks.old_path(),
                301u16,
                self.url(&page_path(picks.old_target)),
            ),
            (picks.moved_path(), 302u16, page_path(picks.moved_target)),
        ] {
            let doc = parse(&self.url(&path))?;
            let target = self.normalize(&doc, &location)?;
            resources.insert(
                path.clone(),
                Resource {
                    location: Some(location),
                    redirect: Some(target),
                    ..Resource::new(
                        doc.to_string(),
                        path,
                        Kind::Redirect,
                        status,
                        redirect_body(status),
                    )
                },
            );
        }
        for path in ["/missing1.html", "/missing2.html"] {
            resources.insert(
                path.to_string(),
                Resource::new(
                    self.url(path),
                    path.to_string(),
                    Kind::Missing,
                    404,
                    not_found_body(),
                ),
            );
        }
        Ok(())
    }

    /// The fate of regular page `j` (drawn once per page, independent of the generation).
    fn fate(&self, j: usize) -> Fate {
        let mut r = Rng::derive(self.spec.seed, &format!("fate-{}", self.i), j as u64);
        let x = r.unit();
        let at = 1 + r.below(3) as u32;
        if x < 0.10 {
            Fate::Remove {
                at,
                status: if j.is_multiple_of(2) { 404 } else { 410 },
            }
        } else if x < 0.15 {
            Fate::Redirect { at }
        } else {
            Fate::Stay
        }
    }

    /// How many of generations `1..=spec.generation` changed page `j` (30% each).
    fn revision(&self, j: usize) -> u32 {
        (1..=self.spec.generation)
            .filter(|&k| {
                Rng::derive(self.spec.seed, &format!("rev-{}-{j}", self.i), k.into()).chance(0.3)
            })
            .count() as u32
    }

    /// A page that is gone (404/410) or now redirects (301 to `target`).
    fn gone(&self, doc: &Url, kind: Kind, status: u16, target: Option<String>) -> Result<Resource> {
        let body = match status {
            301 => redirect_body(301),
            410 => b"<!DOCTYPE html>\n<html><head><title>410 Gone</title></head><body><h1>Gone</h1></body></html>\n".to_vec(),
            _ => not_found_body(),
        };
        Ok(Resource {
            location: target.clone(),
            redirect: target,
            ..Resource::new(doc.to_string(), doc.path().to_string(), kind, status, body)
        })
    }

    /// Resolves `href` against `base` and normalizes it with the default URL policy.
    fn normalize(&self, base: &Url, href: &str) -> Result<String> {
        self.policy
            .check_relative(base, href)
            .map(|u| u.to_string())
            .map_err(|e| Error::Url {
                url: href.to_string(),
                reason: e.to_string(),
            })
    }

    /// Turns a draft into a 200 resource at `doc`, resolving its links as a parser would.
    fn page_resource(
        &self,
        doc: &Url,
        kind: Kind,
        draft: &Draft,
        duplicate_of: Option<String>,
    ) -> Result<Resource> {
        let base = match &draft.base_href {
            Some(b) => doc.join(b).map_err(|e| Error::Url {
                url: b.clone(),
                reason: e.to_string(),
            })?,
            None => doc.clone(),
        };
        let mut seen = HashSet::new();
        let mut outlinks = Vec::new();
        for href in &draft.hrefs {
            // Links the default policy rejects (mailto:) are not outlinks.
            if let Ok(u) = self.policy.check_relative(&base, href) {
                let s = u.to_string();
                if seen.insert(s.clone()) {
                    outlinks.push(s);
                }
            }
        }
        Ok(Resource {
            outlinks,
            title: Some(draft.title.clone()),
            duplicate_of,
            nofollow: draft.nofollow,
            noindex: draft.noindex,
            revision: draft.revision,
            ..Resource::new(
                doc.to_string(),
                doc.path().to_string(),
                kind,
                200,
                draft.body.clone(),
            )
        })
    }

    /// A short page with a title, a paragraph and a list of links.
    fn small_page(&self, doc: &Url, title: &str, links: &[(String, String)]) -> Result<Draft> {
        let mut rng = Rng::derive(self.spec.seed, &format!("small-{}", self.i), 0);
        for b in doc.path().bytes() {
            rng = Rng::derive(rng.next_u64(), "path", u64::from(b));
        }
        let mut page = PageBuilder::new(title, None, None);
        page.heading(title);
        let n = rng.range(15, 40);
        page.paragraph(&[Piece::Text(words(&mut rng, &self.text, n).join(" "))]);
        let mut list = Vec::new();
        for (target, anchor) in links {
            let t = parse(target)?;
            list.push((href_for(&mut rng, doc, &t), anchor.clone()));
        }
        page.link_list("Links", &list);
        let (body, hrefs) = page.finish();
        Ok(Draft {
            body,
            hrefs,
            base_href: None,
            title: title.to_string(),
            nofollow: false,
            noindex: false,
            revision: 0,
        })
    }

    /// Regular page `j`: navigation, paragraphs with inline links, a link list.
    fn regular_page(
        &self,
        j: usize,
        doc: &Url,
        base_href: Option<String>,
        extra: &[(String, String)],
        nofollow: bool,
        noindex: bool,
    ) -> Result<Draft> {
        let mut rng = Rng::derive(self.spec.seed, &format!("page-{}", self.i), j as u64);
        let base = match &base_href {
            Some(b) => parse(b)?,
            None => doc.clone(),
        };
        let title = if j == 0 {
            format!(
                "{} | home of {}",
                phrase(&mut rng, &self.text, 3),
                self.name
            )
        } else {
            format!(
                "{} | {} page {j}",
                phrase(&mut rng, &self.text, 3),
                self.name
            )
        };
        let meta = match (nofollow, noindex) {
            (true, true) => Some("noindex,nofollow"),
            (true, false) => Some("nofollow"),
            (false, true) => Some("noindex"),
            _ => None,
        };
        let mut page = PageBuilder::new(&title, meta, base_href.as_deref());
        page.nav(&self.nav_links(&mut rng, &base, j)?);
        page.heading(&title);

        let mut targets = self.random_targets(&mut rng, doc.as_str());
        let n_inline = rng.below(targets.len() + 1);
        let mut inline = targets.drain(..n_inline).collect::<Vec<_>>().into_iter();
        self.paragraphs(&mut rng, &base, &mut inline, &mut page)?;
        let list = self.see_also(&mut rng, &base, j, inline.chain(targets), extra)?;
        page.link_list("See also", &list);
        let revision = self.revision(j);
        if revision > 0 {
            self.revision_note(j, revision, &mut page);
        }
        let (body, hrefs) = page.finish();
        Ok(Draft {
            body,
            hrefs,
            base_href,
            title,
            nofollow,
            noindex,
            revision,
        })
    }

    /// Navigation of page `j`: home and the first pages (the hubs of the host).
    fn nav_links(&self, rng: &mut Rng, base: &Url, j: usize) -> Result<Links> {
        let mut nav = Vec::new();
        for k in 0..self.spec.pages_per_host.min(4) {
            if k != j {
                let anchor = if k == 0 {
                    "Home".to_string()
                } else {
                    format!("Page {k}")
                };
                nav.push((href_to(rng, base, &self.url(&page_path(k)))?, anchor));
            }
        }
        Ok(nav)
    }

    /// Random link targets with anchors, Zipf-skewed so that low-numbered pages
    /// become hubs; never the page itself (`self_url`).
    fn random_targets(&self, rng: &mut Rng, self_url: &str) -> Links {
        let h = self.spec.hosts;
        let n_links = rng.range(self.spec.min_links, self.spec.max_links);
        let mut targets = Vec::new();
        for _ in 0..n_links {
            let host = if h > 1 && rng.chance(0.25) {
                let other = self.hosts_zipf.sample(rng);
                WebSpec::host_name(if other >= self.i { other + 1 } else { other })
            } else {
                self.name.clone()
            };
            let target = format!("http://{host}{}", page_path(self.zipf.sample(rng)));
            if target == self_url {
                continue;
            }
            let anchor = match rng.below(4) {
                0 => {
                    let n = rng.range(1, 3);
                    phrase(rng, &self.text, n)
                }
                1 => format!("read about {}", words(rng, &self.text, 1).join("")),
                2 => "more".to_string(),
                _ => phrase(rng, &self.text, 2),
            };
            targets.push((target, anchor));
        }
        targets
    }

    /// Two to four paragraphs of text, with links taken from `inline` now and then.
    fn paragraphs(
        &self,
        rng: &mut Rng,
        base: &Url,
        inline: &mut impl Iterator<Item = (String, String)>,
        page: &mut PageBuilder,
    ) -> Result<()> {
        let n_par = rng.range(2, 4);
        for _ in 0..n_par {
            let n_words = rng.range(25, 60);
            let mut pieces = Vec::new();
            let mut text = Vec::new();
            for w in words(rng, &self.text, n_words) {
                text.push(w);
                if rng.chance(0.06)
                    && let Some((target, anchor)) = inline.next()
                {
                    pieces.push(Piece::Text(text.join(" ")));
                    text.clear();
                    pieces.push(Piece::Link {
                        href: href_to(rng, base, &target)?,
                        anchor,
                    });
                }
            }
            pieces.push(Piece::Text(format!("{}.", text.join(" "))));
            page.paragraph(&pieces);
        }
        Ok(())
    }

    /// The "See also" list of page `j`: the remaining random targets, its special
    /// links (`extra`), the next page, a neighbour site, the portal, a mailto: link.
    fn see_also(
        &self,
        rng: &mut Rng,
        base: &Url,
        j: usize,
        targets: impl Iterator<Item = (String, String)>,
        extra: &[(String, String)],
    ) -> Result<Links> {
        let h = self.spec.hosts;
        let mut list = Vec::new();
        for (target, anchor) in targets {
            list.push((href_to(rng, base, &target)?, anchor));
        }
        for (path, anchor) in extra {
            list.push((href_to(rng, base, &self.url(path))?, anchor.clone()));
        }
        if j + 1 < self.spec.pages_per_host {
            list.push((
                href_to(rng, base, &self.url(&page_path(j + 1)))?,
                "next".to_string(),
            ));
        }
        if j == 0 && h > 1 {
            let next = format!("http://{}/", WebSpec::host_name((self.i + 1) % h));
            list.push((href_to(rng, base, &next)?, "a neighbour site".to_string()));
        }
        // A web directory: every page of the other hosts links to site0's home page,
        // which makes it the web's biggest hub (a portal, as the real web has).
        if self.i != 0 {
            let portal = format!("http://{}/", WebSpec::host_name(0));
            list.push((href_to(rng, base, &portal)?, "web directory".to_string()));
        }
        if j % 5 == 2 {
            list.push((
                format!("mailto:webmaster@{}", self.name),
                "write to us".to_string(),
            ));
        }
        Ok(list)
    }

    /// The paragraph revision `revision` of page `j` adds (its own PRNG stream).
    fn revision_note(&self, j: usize, revision: u32, page: &mut PageBuilder) {
        let mut r = Rng::derive(
            self.spec.seed,
            &format!("revtext-{}-{j}", self.i),
            revision.into(),
        );
        let n = r.range(10, 30);
        page.paragraph(&[Piece::Text(format!(
            "Revision {revision}: {}.",
            words(&mut r, &self.text, n).join(" ")
        ))]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web() -> Web {
        generate(&WebSpec::default()).unwrap()
    }

    #[test]
    fn same_spec_same_web_other_seed_other_web() {
        let a = web();
        let b = web();
        let bodies = |w: &Web| w.resources().map(|r| r.body.clone()).collect::<Vec<_>>();
        assert_eq!(bodies(&a), bodies(&b));
        let c = generate(&WebSpec {
            seed: 2,
            ..WebSpec::default()
        })
        .unwrap();
        assert_ne!(bodies(&a), bodies(&c));
    }

    #[test]
    fn every_kind_exists_on_every_host() {
        let w = web();
        assert_eq!(w.hosts.len(), 5);
        for h in &w.hosts {
            for kind in [
                Kind::Home,
                Kind::Page,
                Kind::Private,
                Kind::Other,
                Kind::Hidden,
                Kind::Copy,
                Kind::Redirect,
                Kind::Missing,
            ] {
                assert!(
                    h.resources.values().any(|r| r.kind == kind),
                    "{} {kind:?}",
                    h.name
                );
            }
            let pages = h
                .resources
                .values()
                .filter(|r| matches!(r.kind, Kind::Home | Kind::Page));
            assert_eq!(pages.count(), 20);
        }
        assert_eq!(
            w.seeds,
            vec!["http://site0.web.test/", "http://site1.web.test/"]
        );
    }

    #[test]
    fn outlinks_point_inside_the_web_and_never_to_self() {
        let w = web();
        for r in w.resources() {
            assert!(!r.outlinks.contains(&r.url), "{} links to itself", r.url);
            for o in &r.outlinks {
                assert!(w.resource(o).is_some(), "{} links to unknown {o}", r.url);
            }
            let mut sorted = r.outlinks.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                r.outlinks.len(),
                "duplicate outlinks on {}",
                r.url
            );
        }
    }

    #[test]
    fn copies_repeat_their_original_byte_for_byte() {
        let w = web();
        let copies: Vec<_> = w.resources().filter(|r| r.kind == Kind::Copy).collect();
        assert_eq!(copies.len(), 5);
        for c in copies {
            let orig = w.resource(c.duplicate_of.as_deref().unwrap()).unwrap();
            assert_eq!(orig.body, c.body);
            assert_eq!(orig.outlinks, c.outlinks);
        }
    }

    #[test]
    fn redirects_resolve_to_pages() {
        let w = web();
        for r in w.resources().filter(|r| r.kind == Kind::Redirect) {
            let t = w.resource(r.redirect.as_deref().unwrap()).unwrap();
            assert_eq!(t.status, 200);
            assert!(matches!(r.status, 301 | 302));
        }
    }

    #[test]
    fn generations_change_remove_and_redirect_pages() {
        let maps: Vec<_> = (0..=4)
            .map(|g| {
                generate(&WebSpec {
                    generation: g,
                    ..WebSpec::default()
                })
                .unwrap()
                .site_map()
            })
            .collect();
        let base = &maps[0];
        assert!(base.urls.values().all(|e| e.revision == 0));
        let last = &maps[4];
        let keys = |m: &crate::SiteMap| m.urls.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(base), keys(last), "the URL set never changes");
        let count = |m: &crate::SiteMap, st: u16| {
            m.urls
                .values()
                .filter(|e| e.kind == Kind::Page && e.status == st)
                .count()
        };
        assert_eq!(count(base, 410) + count(base, 301), 0);
        assert!(count(last, 404) + count(last, 410) > 0);
        assert!(count(last, 301) > 0);
        assert!(last.urls.values().any(|e| e.revision > 0));
        for w in maps.windows(2) {
            for (url, a) in &w[0].urls {
                let b = &w[1].urls[url];
                // Revisions only grow; gone pages stay gone; live pages keep their links.
                if b.status == 200 {
                    assert!(b.revision >= a.revision, "{url}");
                }
                if a.status != 200 {
                    assert_eq!(a.status, b.status, "{url}");
                }
                if b.status == 200 {
                    assert_eq!(a.outlinks, b.outlinks, "{url}");
                    assert_eq!(
                        a.body_blake3 == b.body_blake3,
                        a.revision == b.revision,
                        "{url}"
                    );
                }
                if b.status == 301 && a.status == 200 {
                    assert!(b.redirect.as_deref().unwrap().ends_with(".web.test/"));
                }
            }
        }
        // Home pages, copy sources and redirect targets never go away.
        for (url, e) in &last.urls {
            if e.kind == Kind::Home {
                assert_eq!(e.status, 200, "{url}");
            }
            if let Some(orig) = &e.duplicate_of {
                assert_eq!(last.urls[orig].body_blake3, e.body_blake3);
            }
            if let Some(t) = &e.redirect {
                assert!(matches!(last.urls[t].status, 200), "{url} -> {t}");
            }
        }
    }

    #[test]
    fn tiny_webs_work_and_bad_specs_fail() {
        let w = generate(&WebSpec {
            hosts: 1,
            pages_per_host: 1,
            ..WebSpec::default()
        })
        .unwrap();
        assert_eq!(w.seeds.len(), 1);
        assert!(w.resources().any(|r| r.kind == Kind::Copy));
        assert!(
            generate(&WebSpec {
                hosts: 0,
                ..WebSpec::default()
            })
            .is_err()
        );
        assert!(
            generate(&WebSpec {
                min_links: 9,
                max_links: 2,
                ..WebSpec::default()
            })
            .is_err()
        );
    }
}
