//! A crawl of the test web over several generations (docs/testweb.md, "Generations"):
//! between rounds the web is restarted on the same address with the next generation,
//! pages change, vanish (404/410) and turn into 301s, and after each round the
//! crawldb is checked against that generation's site map: the state machine and the
//! adaptive schedule of docs/crawldb.md, through the stage binaries. Also: applying a
//! round's segment twice changes nothing, and `updatedb.purge_gone` drops gone URLs.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use testweb::{Kind, SiteMap};
use trawl::CrawlDatum;

const WEB: &[&str] = &["--seed", "11", "--hosts", "6", "--pages", "14"];
const GENERATIONS: u32 = 3;
/// New URLs start with this interval (seconds); the adaptive schedule moves it.
const DEFAULT_INTERVAL: i64 = 3600;
/// generate --add-days for the re-crawl rounds: beyond every interval (the adaptive
/// schedule's ceiling is one year), so every known URL is due.
const ADD_DAYS: &str = "400";

/// `testweb serve` of one generation on `addr` (the same address every generation, so
/// the crawl's config keeps pointing at it).
fn start_web(dir: &Path, addr: &str, generation: u32) -> TestWeb {
    let g = generation.to_string();
    let mut flags: Vec<&str> = WEB.to_vec();
    flags.extend(["--generation", &g]);
    TestWeb::start_on(dir, addr, &flags)
}

fn map_of(dir: &Path, generation: u32) -> SiteMap {
    let g = generation.to_string();
    let mut flags: Vec<&str> = WEB.to_vec();
    flags.extend(["--generation", &g]);
    site_map(dir, &flags)
}

/// generate (with `generate_args`), fetch, parse, updatedb; the segment, or None
/// when nothing was due.
fn round(crawl: &Path, config: &Path, generate_args: &[&str]) -> Option<PathBuf> {
    let out = run("generate", crawl, config, generate_args);
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(
        out.status.success(),
        "generate failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let segment = String::from_utf8_lossy(&out.stdout).trim().to_string();
    for stage in ["fetch", "parse", "updatedb"] {
        run_ok(stage, crawl, config, &[&segment]);
    }
    Some(PathBuf::from(segment))
}

/// What changed between two generations, as counted over the checks.
#[derive(Debug, Default)]
struct Seen {
    changed: usize,
    unchanged: usize,
    vanished: usize,
    redirected: usize,
}

/// Checks the crawldb after the round of `generation` against its site map.
fn check_generation(
    generation: u32,
    before: &BTreeMap<String, CrawlDatum>,
    after: &BTreeMap<String, CrawlDatum>,
    prev_map: &SiteMap,
    map: &SiteMap,
    seen: &mut Seen,
) {
    let g = generation;
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "generation {g}: links never change, so the URL set does not either"
    );
    for (url, old) in before {
        let new = &after[url];
        // Every URL was due and fetched again.
        assert!(
            new.fetched_time > old.fetched_time,
            "generation {g}: {url} was not fetched again ({:?} -> {:?})",
            old.fetched_time,
            new.fetched_time
        );
        let Some(e) = map.get(url) else {
            // Linked but never served (a dead link): gone every time.
            assert_eq!(new.status.as_str(), "db_gone", "generation {g}: {url}");
            continue;
        };
        if e.disallowed || e.kind == Kind::Hostile || old.metadata.contains_key("last_modified") {
            continue;
        }
        let was_live = matches!(old.status.as_str(), "db_fetched" | "db_notmodified");
        match e.status {
            200 => {
                assert!(
                    was_live,
                    "generation {g}: {url} serves 200 but was {}",
                    old.status
                );
                let changed = prev_map.get(url).map(|p| &p.body_blake3) != Some(&e.body_blake3);
                if changed {
                    seen.changed += 1;
                    assert_eq!(
                        new.status.as_str(),
                        "db_fetched",
                        "generation {g}: changed {url}"
                    );
                    assert!(
                        new.signature.is_some() && new.signature != old.signature,
                        "generation {g}: changed {url} keeps its signature"
                    );
                    assert_eq!(
                        new.modified_time, new.fetched_time,
                        "generation {g}: changed {url}: modified when fetched"
                    );
                    assert!(new.modified_time > old.modified_time);
                    assert_eq!(
                        new.fetch_interval,
                        ((old.fetch_interval as f64 * 0.8).round() as i64).max(60),
                        "generation {g}: changed {url}: adaptive interval x 0.8"
                    );
                } else {
                    seen.unchanged += 1;
                    assert_eq!(
                        new.status.as_str(),
                        "db_notmodified",
                        "generation {g}: unchanged {url}"
                    );
                    assert_eq!(new.signature, old.signature, "generation {g}: {url}");
                    assert_eq!(
                        new.modified_time, old.modified_time,
                        "generation {g}: unchanged {url} keeps its modified time"
                    );
                    assert_eq!(
                        new.fetch_interval,
                        (old.fetch_interval as f64 * 1.4).round() as i64,
                        "generation {g}: unchanged {url}: adaptive interval x 1.4"
                    );
                }
            }
            404 | 410 => {
                assert_eq!(new.status.as_str(), "db_gone", "generation {g}: {url}");
                assert_eq!(
                    new.reason.as_deref(),
                    Some(format!("http_{}", e.status).as_str()),
                    "generation {g}: {url}"
                );
                assert_eq!(new.http_status, Some(e.status as i32));
                if was_live {
                    seen.vanished += 1;
                    // Re-checked rarely: the interval grows by half.
                    assert_eq!(
                        new.fetch_interval,
                        (old.fetch_interval as f64 * 1.5) as i64,
                        "generation {g}: vanished {url}"
                    );
                    assert_eq!(
                        new.signature, old.signature,
                        "the last content's signature stays"
                    );
                }
            }
            301 => {
                assert_eq!(
                    new.status.as_str(),
                    "db_redir_perm",
                    "generation {g}: {url}"
                );
                let target = e.redirect.as_deref().expect("a 301 has a target");
                assert_eq!(new.redirect_target.as_deref(), Some(target));
                assert!(
                    after.contains_key(target),
                    "generation {g}: redirect target {target} of {url} is in the crawldb"
                );
                if was_live {
                    seen.redirected += 1;
                }
            }
            other => {
                // 302 or other statuses the small web does not serve to regular pages.
                assert!(
                    !matches!(other, 200 | 404 | 410 | 301),
                    "generation {g}: {url}"
                );
            }
        }
    }
}

#[test]
fn pages_change_vanish_and_redirect_across_generations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut web = start_web(dir, "127.0.0.1:0", 0);
    let addr = web.addr.clone();
    let config = write_config(
        dir,
        &addr,
        0.02,
        &format!("[updatedb]\nschedule = \"adaptive\"\ndefault_interval = {DEFAULT_INTERVAL}\n"),
    );
    let crawl = dir.join("crawl");
    let map0 = map_of(dir, 0);
    inject_seeds(dir, &crawl, &config, &map0.seeds);

    // Generation 0: crawl until nothing new is due (new URLs are due at once; fetched
    // ones only after their interval).
    let mut rounds = 0;
    while round(&crawl, &config, &[]).is_some() {
        rounds += 1;
        assert!(rounds <= 12, "generation 0 crawl did not converge");
    }
    let reachable = map0.reachable(&map0.seeds, None);
    let db = crawldb(&crawl);
    for url in reachable.keys() {
        assert!(
            db.contains_key(url),
            "generation 0: {url} is reachable but unknown"
        );
    }
    assert!(
        db.values().all(|d| d.status.as_str() != "db_unfetched"),
        "generation 0 crawl attempted every URL"
    );

    let mut seen = Seen::default();
    let mut prev_map = map0;
    let mut last_segment = None;
    for g in 1..=GENERATIONS {
        // The next generation on the same address.
        drop(web);
        web = start_web(dir, &addr, g);
        assert_eq!(web.addr, addr);
        let map = map_of(dir, g);
        let before = crawldb(&crawl);
        let seg = round(&crawl, &config, &["--add-days", ADD_DAYS])
            .unwrap_or_else(|| panic!("generation {g}: nothing due with --add-days {ADD_DAYS}"));
        let after = crawldb(&crawl);
        check_generation(g, &before, &after, &prev_map, &map, &mut seen);
        prev_map = map;
        last_segment = Some(seg);
    }
    assert!(
        seen.changed > 0 && seen.unchanged > 0 && seen.vanished > 0 && seen.redirected > 0,
        "the generations exercised every transition: {seen:?}"
    );

    // Applying the last segment again changes nothing (scores, rows, statuses).
    let seg = last_segment.unwrap();
    let before = crawldb(&crawl);
    run_ok("updatedb", &crawl, &config, &[seg.to_str().unwrap()]);
    let after = crawldb(&crawl);
    assert_eq!(before.len(), after.len());
    for (url, d) in &before {
        let a = &after[url];
        assert_eq!(
            (
                d.status,
                d.score,
                d.fetch_time,
                d.fetch_interval,
                &d.signature
            ),
            (
                a.status,
                a.score,
                a.fetch_time,
                a.fetch_interval,
                &a.signature
            ),
            "{url} changed when its segment was applied twice"
        );
    }

    // purge_gone: one more round with it on drops every gone URL, and only those.
    let purge = dir.join("purge.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&purge, text + "purge_gone = true\n").unwrap();
    let gone: Vec<String> = after
        .iter()
        .filter(|(_, d)| d.status.as_str() == "db_gone")
        .map(|(u, _)| u.clone())
        .collect();
    assert!(!gone.is_empty());
    round(&crawl, &purge, &["--add-days", ADD_DAYS]).expect("a round with purge_gone");
    let purged = crawldb(&crawl);
    for u in &gone {
        assert!(!purged.contains_key(u), "{u} is gone and purge_gone is on");
    }
    assert!(purged.values().all(|d| d.status.as_str() != "db_gone"));
    assert_eq!(purged.len() + gone.len(), after.len());
}
