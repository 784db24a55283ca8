//! `index --to jsonl FILE`: the index's documents in the Elasticsearch / OpenSearch
//! bulk format, for users who run a search cluster.
//!
//! Two lines per document: the action, `{"index":{"_index":NAME,"_id":ID}}`, then
//! the document, with the fields of [`super::schema`] (`host` for the `site` field,
//! `anchors` as a list, `fetch_time` as RFC 3339 UTC). `ID` is the URL, or the
//! blake3 hex of the URL when the URL is longer than the 512 bytes Elasticsearch
//! allows for an `_id`. Load it with the bulk API:
//! `curl -H 'Content-Type: application/x-ndjson' --data-binary @FILE localhost:9200/_bulk`
//! (split files of more than ~100 MB, the default `http.max_content_length`).

use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{Map, Value as Json, json};
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, TantivyDocument};

use crate::error::{Error, Result};

use super::schema::Fields;
use super::search::Searcher;

/// Longest `_id` Elasticsearch accepts (bytes).
const MAX_ID_BYTES: usize = 512;

/// Writes every document of the index at `dir` to `out` (`-`: standard output) in the
/// bulk format, under index name `name`; returns the number of documents. A file is
/// written under a temporary name and renamed into place when complete.
pub fn export_jsonl(dir: &Path, out: &Path, name: &str) -> Result<u64> {
    let searcher = Searcher::open(dir)?;
    if out == Path::new("-") {
        let stdout = std::io::stdout();
        let mut w = BufWriter::new(stdout.lock());
        // A reader that stops early (`| head`) is not an error.
        return match write_all(&searcher, &mut w, name).and_then(|n| {
            w.flush().map_err(|e| Error::io("(stdout)", e))?;
            Ok(n)
        }) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
                Ok(0)
            }
            other => other,
        };
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(parent).map_err(|e| Error::io(parent, e))?;
    let mut w = BufWriter::new(tmp.as_file());
    let n = write_all(&searcher, &mut w, name)?;
    w.flush().map_err(|e| Error::io(out, e))?;
    drop(w);
    tmp.as_file().sync_all().map_err(|e| Error::io(out, e))?;
    tmp.persist(out).map_err(|e| Error::io(out, e.error))?;
    Ok(n)
}

fn write_all(searcher: &Searcher, w: &mut impl Write, name: &str) -> Result<u64> {
    let fields = *searcher.fields();
    let mut n = 0;
    for s in searcher.shard_searchers() {
        for (ord, seg) in s.segment_readers().iter().enumerate() {
            for doc_id in seg.doc_ids_alive() {
                let doc: TantivyDocument =
                    s.doc(DocAddress::new(ord as u32, doc_id))
                        .map_err(|e| Error::Index {
                            message: format!("cannot read a stored document: {e}"),
                        })?;
                let body = document_json(&doc, &fields);
                let url = body.get("url").and_then(Json::as_str).unwrap_or_default();
                let id = if url.len() <= MAX_ID_BYTES {
                    url.to_string()
                } else {
                    blake3::hash(url.as_bytes()).to_hex().to_string()
                };
                let action = json!({"index": {"_index": name, "_id": id}});
                writeln!(w, "{action}\n{}", Json::Object(body))
                    .map_err(|e| Error::io("(export)", e))?;
                n += 1;
                if n % 1024 == 0 {
                    crate::signal::check("index --to jsonl")?;
                }
            }
        }
    }
    Ok(n)
}

/// A stored document as the export's JSON object.
pub fn document_json(doc: &TantivyDocument, f: &Fields) -> Map<String, Json> {
    let mut m = Map::new();
    let text = |field: Field| {
        doc.get_first(field)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let put_text = |m: &mut Map<String, Json>, key: &str, field: Field| {
        if let Some(t) = text(field) {
            m.insert(key.into(), Json::String(t));
        }
    };
    put_text(&mut m, "url", f.url);
    put_text(&mut m, "host", f.site);
    put_text(&mut m, "title", f.title);
    let anchors: Vec<Json> = doc
        .get_all(f.anchors)
        .filter_map(|v| v.as_str().map(|s| Json::String(s.to_string())))
        .collect();
    m.insert("anchors".into(), Json::Array(anchors));
    put_text(&mut m, "main_text", f.main_text);
    put_text(&mut m, "other_text", f.other_text);
    put_text(&mut m, "lang", f.lang);
    put_text(&mut m, "content_type", f.content_type);
    put_text(&mut m, "segment", f.segment);
    if let Some(lines) = text(f.sections) {
        let sections: Vec<Json> = lines
            .lines()
            .filter_map(|l| {
                let mut p = l.splitn(3, '\t');
                let (level, id, heading) = (p.next()?, p.next()?, p.next()?);
                Some(json!({"level": level.parse::<u8>().ok()?, "id": id, "heading": heading}))
            })
            .collect();
        m.insert("sections".into(), Json::Array(sections));
    }
    if let Some(t) = doc.get_first(f.fetch_time).and_then(|v| v.as_datetime()) {
        let ms = t.into_timestamp_millis();
        if let Some(dt) = chrono::DateTime::from_timestamp_millis(ms) {
            m.insert(
                "fetch_time".into(),
                Json::String(dt.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            );
        }
    }
    for (key, field) in [("pagerank", f.pagerank), ("hostrank", f.hostrank)] {
        if let Some(v) = doc.get_first(field).and_then(|v| v.as_f64()) {
            m.insert(key.into(), json!(v));
        }
    }
    for (key, field) in [
        ("inlinks", f.inlinks),
        ("url_depth", f.url_depth),
        ("crawl_depth", f.crawl_depth),
    ] {
        if let Some(v) = doc.get_first(field).and_then(|v| v.as_u64()) {
            m.insert(key.into(), json!(v));
        }
    }
    m
}
