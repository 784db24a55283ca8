//! Table tests of every transition of the state machine.

use super::*;

const NOW: Millis = 1_800_000_000_000;
const FT: Millis = NOW - 60_000;
const DAY: i64 = 86400;

fn ctx() -> Ctx {
    Ctx::new(&UpdateDbConfig::default(), 0, NOW)
}

fn db(status: DbStatus) -> CrawlDatum {
    let mut d = CrawlDatum::unfetched(
        "http://a.test/p".into(),
        "a.test".into(),
        NOW - DAY * 1000,
        30 * DAY,
    );
    d.status = status;
    d.score = 1.0;
    d.depth = 2;
    if status != DbStatus::DbUnfetched {
        d.signature = Some("sigA".into());
        d.modified_time = Some(NOW - 40 * DAY * 1000);
        d.fetched_time = Some(NOW - 30 * DAY * 1000);
    }
    d
}

fn fetch(status: FetchStatus, reason: &str) -> FetchRecord {
    FetchRecord {
        url: "http://a.test/p".into(),
        host: "a.test".into(),
        status,
        reason: reason.into(),
        fetch_time: FT,
        http_status: Some(match status {
            FetchStatus::FetchSuccess => 200,
            FetchStatus::FetchNotmodified => 304,
            FetchStatus::FetchRedirTemp => 302,
            FetchStatus::FetchRedirPerm => 301,
            FetchStatus::FetchGone => 404,
            FetchStatus::FetchRetry => 503,
        }),
        content_type: Some("text/html".into()),
        content_length: Some(10),
        redirect_target: matches!(
            status,
            FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm
        )
        .then(|| "http://a.test/q".into()),
        etag: Some("\"e1\"".into()),
        last_modified: None,
        response_time_ms: Some(5),
        score: 1.0,
        depth: 2,
    }
}

fn run(
    old: Option<CrawlDatum>,
    f: &[FetchRecord],
    sig: Option<&str>,
    links: &[Inlink],
    c: &Ctx,
) -> Option<CrawlDatum> {
    reduce(
        "http://a.test/p",
        "a.test",
        old,
        Observed {
            fetches: f,
            signature: sig,
            inlinks: links,
            ..Observed::default()
        },
        c,
        || true,
    )
}

// One long table on purpose: every (old status, fetch outcome) transition is a row,
// read top to bottom against docs/crawldb.md's table; splitting it would scatter rows.
#[test]
fn fetch_transitions_table() {
    use DbStatus::*;
    use FetchStatus::*;
    // (old status, fetch status, reason, signature, retries before,
    //  expected status, expected retries, expected fetch_time)
    let gone_interval = (30 * DAY) * 3 / 2;
    #[allow(clippy::type_complexity)]
    let cases: Vec<(
        DbStatus,
        FetchStatus,
        &str,
        Option<&str>,
        i32,
        DbStatus,
        i32,
        Millis,
    )> = vec![
        (
            DbUnfetched,
            FetchSuccess,
            "ok",
            Some("sigB"),
            0,
            DbFetched,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbUnfetched,
            FetchSuccess,
            "ok",
            None,
            0,
            DbFetched,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbFetched,
            FetchSuccess,
            "ok",
            Some("sigB"),
            0,
            DbFetched,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbFetched,
            FetchSuccess,
            "ok",
            Some("sigA"),
            0,
            DbNotmodified,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbNotmodified,
            FetchSuccess,
            "ok",
            Some("sigA"),
            0,
            DbNotmodified,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbGone,
            FetchSuccess,
            "ok",
            Some("sigA"),
            0,
            DbFetched,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbFetched,
            FetchSuccess,
            "ok",
            Some("sigB"),
            2,
            DbFetched,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbFetched,
            FetchNotmodified,
            "not_modified",
            None,
            0,
            DbNotmodified,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbUnfetched,
            FetchRedirTemp,
            "http_302",
            None,
            0,
            DbRedirTemp,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbFetched,
            FetchRedirPerm,
            "http_301",
            None,
            0,
            DbRedirPerm,
            0,
            FT + 30 * DAY * 1000,
        ),
        (
            DbUnfetched,
            FetchRetry,
            "timeout",
            None,
            0,
            DbUnfetched,
            1,
            FT + DAY * 1000,
        ),
        (
            DbFetched,
            FetchRetry,
            "http_503",
            None,
            1,
            DbFetched,
            2,
            FT + DAY * 1000,
        ),
        (
            DbUnfetched,
            FetchRetry,
            "timeout",
            None,
            2,
            DbGone,
            3,
            FT + gone_interval * 1000,
        ),
        // time_limit: never tried -> unchanged, due now
        (
            DbUnfetched,
            FetchRetry,
            "time_limit",
            None,
            1,
            DbUnfetched,
            1,
            NOW - DAY * 1000,
        ),
        // interrupted (SIGINT/SIGTERM): never tried either
        (
            DbFetched,
            FetchRetry,
            "interrupted",
            None,
            2,
            DbFetched,
            2,
            NOW - DAY * 1000,
        ),
        // throughput_limit: never tried either
        (
            DbFetched,
            FetchRetry,
            "throughput_limit",
            None,
            2,
            DbFetched,
            2,
            NOW - DAY * 1000,
        ),
        (
            DbUnfetched,
            FetchGone,
            "http_404",
            None,
            0,
            DbGone,
            0,
            FT + gone_interval * 1000,
        ),
        (
            DbFetched,
            FetchGone,
            "robots_denied",
            None,
            1,
            DbGone,
            0,
            FT + gone_interval * 1000,
        ),
    ];
    for (i, (old_st, fst, reason, sig, retries, want, want_retries, want_time)) in
        cases.into_iter().enumerate()
    {
        let mut old = db(old_st);
        old.retries = retries;
        let f = fetch(fst, reason);
        let got = run(
            Some(old.clone()),
            std::slice::from_ref(&f),
            sig,
            &[],
            &ctx(),
        )
        .unwrap_or_else(|| panic!("case {i}: row dropped"));
        assert_eq!(got.status, want, "case {i}: status");
        assert_eq!(got.retries, want_retries, "case {i}: retries");
        assert_eq!(got.fetch_time, want_time, "case {i}: fetch_time");
        assert_eq!(got.score, 1.0, "case {i}: score unchanged without links");
        assert_eq!(got.depth, 2, "case {i}: depth kept");
        if not_attempted(reason) {
            assert_eq!(got.fetched_time, old.fetched_time, "case {i}");
            continue;
        }
        if fst != FetchRetry {
            assert_eq!(got.fetched_time, Some(FT), "case {i}: fetched_time");
            assert_eq!(got.http_status, f.http_status, "case {i}: http_status");
            assert_eq!(got.reason.as_deref(), Some(reason), "case {i}: reason");
            assert_eq!(
                got.metadata.get("etag").map(String::as_str),
                Some("\"e1\""),
                "case {i}"
            );
        }
        match want {
            DbRedirTemp | DbRedirPerm => {
                assert_eq!(
                    got.redirect_target.as_deref(),
                    Some("http://a.test/q"),
                    "case {i}"
                )
            }
            _ => assert_eq!(got.redirect_target, None, "case {i}"),
        }
        if want == DbGone {
            assert_eq!(got.fetch_interval, gone_interval, "case {i}: gone interval");
        }
    }
}

#[test]
fn signatures_and_modified_time() {
    let old = db(DbStatus::DbFetched);
    let changed = run(
        Some(old.clone()),
        &[fetch(FetchStatus::FetchSuccess, "ok")],
        Some("sigB"),
        &[],
        &ctx(),
    )
    .unwrap();
    assert_eq!(changed.signature.as_deref(), Some("sigB"));
    assert_eq!(changed.modified_time, Some(FT));
    let same = run(
        Some(old.clone()),
        &[fetch(FetchStatus::FetchSuccess, "ok")],
        Some("sigA"),
        &[],
        &ctx(),
    )
    .unwrap();
    assert_eq!(same.signature.as_deref(), Some("sigA"));
    assert_eq!(
        same.modified_time, old.modified_time,
        "unchanged content keeps modified_time"
    );
    // first fetch of an unfetched URL sets modified_time even without signature
    let first = run(
        Some(db(DbStatus::DbUnfetched)),
        &[fetch(FetchStatus::FetchSuccess, "ok")],
        None,
        &[],
        &ctx(),
    )
    .unwrap();
    assert_eq!(first.modified_time, Some(FT));
    assert_eq!(first.signature, None);
}

#[test]
fn gone_interval_is_capped() {
    let mut old = db(DbStatus::DbFetched);
    old.fetch_interval = 80 * DAY;
    let got = run(
        Some(old),
        &[fetch(FetchStatus::FetchGone, "http_410")],
        None,
        &[],
        &ctx(),
    )
    .unwrap();
    assert_eq!(got.fetch_interval, (90.0 * DAY as f64 * 0.9) as i64);
}

#[test]
fn purge_gone_drops_rows() {
    let mut c = ctx();
    c.cfg.purge_gone = true;
    assert!(
        run(
            Some(db(DbStatus::DbFetched)),
            &[fetch(FetchStatus::FetchGone, "http_404")],
            None,
            &[],
            &c
        )
        .is_none()
    );
    assert!(run(Some(db(DbStatus::DbGone)), &[], None, &[], &c).is_none());
    assert!(run(Some(db(DbStatus::DbFetched)), &[], None, &[], &c).is_some());
}

fn link(score: f64, depth: i32) -> Inlink {
    Inlink {
        score,
        depth,
        redirect: false,
    }
}

#[test]
fn new_urls_from_links() {
    let c = ctx();
    let got = run(None, &[], None, &[link(0.25, 3), link(0.5, 2)], &c).unwrap();
    assert_eq!(got.url, "http://a.test/p");
    assert_eq!(got.host, "a.test");
    assert_eq!(got.status, DbStatus::DbUnfetched);
    assert_eq!(got.depth, 2, "min depth over inlinks");
    assert_eq!(got.score, 0.75, "OPIC sum of contributions");
    assert_eq!(got.fetch_time, NOW);
    assert_eq!(got.fetch_interval, c.cfg.default_interval);
    // no inlinks, nothing known -> nothing
    assert!(run(None, &[], None, &[], &c).is_none());
    // --no-additions
    let mut no_add = c.clone();
    no_add.additions = false;
    assert!(run(None, &[], None, &[link(0.5, 1)], &no_add).is_none());
    // max_depth
    let mut shallow = c.clone();
    shallow.max_depth = 2;
    assert!(run(None, &[], None, &[link(0.5, 3)], &shallow).is_none());
    assert!(run(None, &[], None, &[link(0.5, 2)], &shallow).is_some());
    // the URL policy
    assert!(
        reduce(
            "http://a.test/p",
            "a.test",
            None,
            Observed {
                inlinks: &[link(0.5, 1)],
                ..Observed::default()
            },
            &c,
            || false
        )
        .is_none()
    );
}

#[test]
fn known_urls_accumulate_link_scores_and_keep_their_record() {
    let old = db(DbStatus::DbFetched);
    let got = run(
        Some(old.clone()),
        &[],
        None,
        &[link(0.25, 0), link(0.5, 0)],
        &ctx(),
    )
    .unwrap();
    assert_eq!(got.score, 1.75);
    assert_eq!(got.depth, old.depth, "depth of a known URL is kept");
    assert_eq!(got.status, old.status);
    assert_eq!(got.fetch_time, old.fetch_time);
    // redirects add no score to a known target
    let r = run(
        Some(old.clone()),
        &[],
        None,
        &[Inlink {
            score: 5.0,
            depth: 0,
            redirect: true,
        }],
        &ctx(),
    )
    .unwrap();
    assert_eq!(r.score, 1.0);
}

#[test]
fn redirect_target_enters_with_source_score_and_depth() {
    let got = run(
        None,
        &[],
        None,
        &[Inlink {
            score: 0.7,
            depth: 4,
            redirect: true,
        }],
        &ctx(),
    )
    .unwrap();
    assert_eq!(got.depth, 4);
    assert_eq!(got.score, 0.7);
}

#[test]
fn fetched_url_missing_from_crawldb_is_rebuilt() {
    let got = run(
        None,
        &[fetch(FetchStatus::FetchSuccess, "ok")],
        Some("s"),
        &[],
        &ctx(),
    )
    .unwrap();
    assert_eq!(got.status, DbStatus::DbFetched);
    assert_eq!(got.depth, 2);
    assert_eq!(got.signature.as_deref(), Some("s"));
    // --no-additions: only known URLs are updated (a followed redirect target, or a
    // URL purged since generate, stays out).
    let mut no_add = ctx();
    no_add.additions = false;
    let fetches = [fetch(FetchStatus::FetchSuccess, "ok")];
    assert!(run(None, &fetches, Some("s"), &[], &no_add).is_none());
    assert!(
        run(
            Some(db(DbStatus::DbUnfetched)),
            &fetches,
            Some("s"),
            &[],
            &no_add
        )
        .is_some()
    );
}

#[test]
fn adaptive_schedule_in_the_machine() {
    let mut c = ctx();
    c.schedule = Schedule::Adaptive;
    let old = db(DbStatus::DbFetched);
    let changed = run(
        Some(old.clone()),
        &[fetch(FetchStatus::FetchSuccess, "ok")],
        Some("sigB"),
        &[],
        &c,
    )
    .unwrap();
    assert_eq!(changed.fetch_interval, 24 * DAY);
    let same = run(
        Some(old),
        &[fetch(FetchStatus::FetchSuccess, "ok")],
        Some("sigA"),
        &[],
        &c,
    )
    .unwrap();
    assert_eq!(same.fetch_interval, 42 * DAY);
}

#[test]
fn conditional_headers_are_stored_and_cleared() {
    let mut f = fetch(FetchStatus::FetchSuccess, "ok");
    f.last_modified = Some("Wed, 21 Oct 2015 07:28:00 GMT".into());
    let got = run(Some(db(DbStatus::DbUnfetched)), &[f], None, &[], &ctx()).unwrap();
    assert_eq!(
        got.metadata.get("last_modified").map(String::as_str),
        Some("Wed, 21 Oct 2015 07:28:00 GMT")
    );
    let mut f2 = fetch(FetchStatus::FetchSuccess, "ok");
    f2.etag = None;
    let again = run(Some(got), &[f2], None, &[], &ctx()).unwrap();
    assert!(!again.metadata.contains_key("etag"));
    assert!(!again.metadata.contains_key("last_modified"));
}
