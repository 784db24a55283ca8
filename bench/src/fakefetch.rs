//! A synthetic fetch and parse result for a generated segment, for the scale
//! benchmark (`fakefetch`, `scalebench`): what `fetch` and `parse` would write if
//! every URL of the fetch list answered 200 with a page of `outlinks` links to URLs
//! not yet known, without a network or page bodies.
//!
//! Written through the library's writers and layout and committed as the real
//! stages commit them, under the segment's lock: `crawl_fetch` (one
//! `fetch_success` row per fetch-list URL, fetch's partitioning), then `parse_text`,
//! `crawl_parse` (a signature row per page, a link row per outlink, in its target
//! host's partition, the page's score shared among its links, depth + 1),
//! `parse_inlinks` (a row per outlink, linkdb's input) and `parse_data` (outlinks, signature, SimHash; one page in 8 a copy, for dedup: [`signature_of`]), as parse commits them. So the
//! segment is fetched and parsed for updatedb, linkdb and pagerank. Not written:
//! `content` (page bodies; its size is the pages' own) and `robots`.
//!
//! Outlink `m` of page `u` on host `H` (part `i` of the fetch list) points to
//! `http://<H'>/n/<k>-<m>.html`, `H'` the host `m + 1` places after `H` among the
//! part's hosts (so links cross hosts but stay in the partition; the same host when
//! the part has one) and `<k>` the page's position in its part: every target is new
//! and distinct.
//!
//! With `text_words` > 0 every page gets a title and a main text of that many words
//! of [`crate::synthtext`]'s Zipf vocabulary (the full text is the title and the main
//! text), deterministic per URL, so the pages can be indexed and searched (the
//! search benchmark); with 0 the text is a short placeholder.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use trawl::datum::{CrawlDatum, now_millis};
use trawl::error::{Error, Result};
use trawl::records::{
    CrawlParseRecord, FetchRecord, InlinkRecord, Outlink, ParseDataRecord, ParseTextRecord,
};
use trawl::store::layout::CrawlDir;
use trawl::store::names::SegmentDataset;
use trawl::store::parquet::{self, PartWriter, StagedDataset};

use crate::synthtext::Vocabulary;

/// What was written.
#[derive(Debug, Default, Clone, Copy)]
pub struct FakeFetchReport {
    /// Pages "fetched" (fetch-list URLs).
    pub pages: u64,
    /// Link rows of `crawl_parse` (outlinks).
    pub links: u64,
}

/// Writes the fetch and parse results of `segment` (a path or a name under
/// `segments/`), `outlinks` links per page. The segment must be generated and not
/// fetched yet.
pub fn fake_fetch(
    root: &Path,
    segment: &Path,
    outlinks: usize,
    text_words: usize,
) -> Result<FakeFetchReport> {
    let vocab = (text_words > 0).then(Vocabulary::new);
    let text = vocab.as_ref().map(|v| (v, text_words));
    let dir = CrawlDir::new(root);
    let seg = dir.segment(segment)?;
    let _lock = seg.lock("fakefetch")?;
    let list = seg.require(SegmentDataset::CrawlGenerate, "generate")?;
    if seg.dataset(SegmentDataset::CrawlFetch).exists() {
        return Err(Error::crawl_dir(
            seg.path(),
            "already fetched (crawl_fetch/ exists): generate a new segment",
        ));
    }
    let n = seg.meta()?.partitions.max(1);
    let parts = parquet::part_files(&list)?;
    let now = now_millis();

    let fetch_ds = StagedDataset::new(&seg.dataset(SegmentDataset::CrawlFetch))?;
    let text_ds = StagedDataset::new(&seg.dataset(SegmentDataset::ParseText))?;
    let cp_ds = StagedDataset::new(&seg.dataset(SegmentDataset::CrawlParse))?;
    let data_ds = StagedDataset::new(&seg.dataset(SegmentDataset::ParseData))?;
    let inl_ds = StagedDataset::new(&seg.dataset(SegmentDataset::ParseInlinks))?;
    let out = Out {
        fetch: &fetch_ds,
        text: &text_ds,
        parse: &cp_ds,
        data: &data_ds,
        inlinks: &inl_ds,
        segment: seg.name(),
    };
    let counts = (0..n)
        .into_par_iter()
        .map(|i| {
            let part = parts.get(i).filter(|p| p.is_file());
            let rows: Vec<CrawlDatum> = match part {
                Some(p) => parquet::read_part_all(p)?,
                None => Vec::new(),
            };
            write_part(&out, i, &rows, outlinks, text, now)
        })
        .collect::<Result<Vec<FakeFetchReport>>>()?;
    // fetch commits crawl_fetch; parse then parse_text, crawl_parse, parse_inlinks,
    // parse_data.
    fetch_ds.commit()?;
    text_ds.commit()?;
    cp_ds.commit()?;
    // No fetch redirected, so crawl_parse holds every redirect (none), as parse marks
    // it: updatedb tasks then read only their partition's files.
    let mut meta = seg.meta()?;
    meta.redirects_in_crawl_parse = true;
    seg.write_meta(&meta)?;
    inl_ds.commit()?;
    data_ds.commit()?;
    Ok(counts
        .iter()
        .fold(FakeFetchReport::default(), |a, c| FakeFetchReport {
            pages: a.pages + c.pages,
            links: a.links + c.links,
        }))
}

/// The staged datasets written into.
struct Out<'a> {
    fetch: &'a StagedDataset,
    text: &'a StagedDataset,
    parse: &'a StagedDataset,
    data: &'a StagedDataset,
    /// linkdb's shuffle: the links by target partition (targets stay in the part).
    inlinks: &'a StagedDataset,
    /// The segment's name (`InlinkRecord::segment`).
    segment: &'a str,
}

/// Writes part `i` of every dataset from the fetch-list rows of part `i`.
fn write_part(
    out: &Out<'_>,
    i: usize,
    rows: &[CrawlDatum],
    outlinks: usize,
    words: Option<(&Vocabulary, usize)>,
    now: i64,
) -> Result<FakeFetchReport> {
    let mut fetch = PartWriter::<FetchRecord>::create(&out.fetch.part_path(i))?;
    let mut text = PartWriter::<ParseTextRecord>::create(&out.text.part_path(i))?;
    let mut parse = PartWriter::<CrawlParseRecord>::create(&out.parse.part_path(i))?;
    let mut data = PartWriter::<ParseDataRecord>::create(&out.data.part_path(i))?;
    let mut inlinks = PartWriter::<InlinkRecord>::create(&out.inlinks.part_path(i))?;
    // The part's hosts, in name order: link targets cycle through them.
    let hosts: Vec<&str> = rows
        .iter()
        .map(|d| d.host.as_str())
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .collect();
    let index: BTreeMap<&str, usize> = hosts.iter().enumerate().map(|(k, h)| (*h, k)).collect();
    let mut report = FakeFetchReport::default();
    for (k, d) in rows.iter().enumerate() {
        let h = index.get(d.host.as_str()).copied().unwrap_or(0);
        let links: Vec<Outlink> = (0..outlinks)
            .map(|m| {
                let host = hosts
                    .get((h + m + 1) % hosts.len().max(1))
                    .copied()
                    .unwrap_or(&d.host);
                Outlink {
                    url: format!("http://{host}/n/{k}-{m}.html"),
                    anchor: format!("link {m}"),
                    nofollow: false,
                }
            })
            .collect();
        let (signature, simhash) = signature_of(&d.url, i, k);
        fetch.push(crate::benchgen::fetch_ok(
            d.url.clone(),
            d.host.clone(),
            now,
            d.score,
            d.depth,
        ))?;
        parse.push(CrawlParseRecord {
            url: d.url.clone(),
            host: d.host.clone(),
            kind: "signature".into(),
            from_url: None,
            anchor: None,
            score: 0.0,
            depth: d.depth,
            signature: Some(signature.clone()),
        })?;
        let share = if links.is_empty() {
            0.0
        } else {
            d.score / links.len() as f64
        };
        for l in &links {
            parse.push(CrawlParseRecord {
                url: l.url.clone(),
                host: trawl::urls::host_of(&l.url),
                kind: "link".into(),
                from_url: Some(d.url.clone()),
                anchor: Some(l.anchor.clone()),
                score: share,
                depth: d.depth.saturating_add(1),
                signature: None,
            })?;
            inlinks.push(InlinkRecord {
                url: l.url.clone(),
                from_url: d.url.clone(),
                anchor: l.anchor.clone(),
                segment: out.segment.to_string(),
            })?;
        }
        let mut row = data_row(d, links, signature, k as u64, simhash);
        match words {
            Some((vocab, n)) => {
                let title = vocab.title(&d.url);
                let main = vocab.text(&d.url, n);
                text.push(ParseTextRecord {
                    url: d.url.clone(),
                    text: format!("{title}. {main}"),
                    main_text: Some(main),
                })?;
                row.title = Some(title);
            }
            None => text.push(ParseTextRecord {
                url: d.url.clone(),
                text: format!("page {k} of part {i}"),
                main_text: None,
            })?,
        }
        report.pages += 1;
        report.links += row.outlinks.len() as u64;
        data.push(row)?;
    }
    fetch.finish()?;
    text.finish()?;
    parse.finish()?;
    inlinks.finish()?;
    data.finish()?;
    Ok(report)
}

/// The `parse_data` row of a page with `links`.
/// How many duplicate families the copies ([`signature_of`]) fall into.
pub const FAMILIES: u64 = 50_000;

/// The signature and SimHash of page `url` (position `k` of part `i`): one page in 8
/// (by the blake3 of its URL) is a copy of one of [`FAMILIES`] pages, half of them
/// exact (the family's signature) and half near (a signature of their own), all
/// with the family's SimHash with one bit flipped, so that dedup has exact and near
/// duplicates across hosts and partitions to find; every other page has a
/// signature and a SimHash of its own.
fn signature_of(url: &str, i: usize, k: usize) -> (String, u64) {
    let h = blake3::hash(url.as_bytes());
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h.as_bytes()[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let (a, b) = (word(0), word(8));
    if a % 8 == 0 {
        let family = (a >> 3) % FAMILIES;
        let base = family.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29) ^ 0x5bd1_e995;
        let signature = if a % 16 == 0 {
            format!("{:032x}", (1u128 << 127) | family as u128)
        } else {
            format!("{:032x}", ((i as u128) << 64) | k as u128)
        };
        (signature, base ^ (1 << (b % 64)))
    } else {
        (format!("{:032x}", ((i as u128) << 64) | k as u128), b)
    }
}

fn data_row(
    d: &CrawlDatum,
    outlinks: Vec<Outlink>,
    signature: String,
    k: u64,
    simhash: u64,
) -> ParseDataRecord {
    ParseDataRecord {
        url: d.url.clone(),
        status: "parse_success".into(),
        reason: "ok".into(),
        title: Some(format!("page {k}")),
        content_type: Some("text/html".into()),
        charset: Some("utf-8".into()),
        charset_source: Some("http_header".into()),
        lang: Some("en".into()),
        canonical: None,
        noindex: false,
        nofollow: false,
        noarchive: false,
        outlinks,
        signature: Some(signature),
        simhash: Some(simhash),
        metadata: BTreeMap::new(),
    }
}
