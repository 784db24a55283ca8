//! Fetching one URL and turning the response (or failure) into its crawl_fetch
//! row, its content row and a signal for the host queue.

use std::sync::Arc;

use reqwest::header::{HeaderName, IF_MODIFIED_SINCE, IF_NONE_MATCH};

use crate::datum::{CrawlDatum, FetchStatus, now_millis};
use crate::fetch::writer::Output;
use crate::net::client::{Fetched, Http};
use crate::net::outcome::{
    HostSignal, classify_error, classify_http, failure_signal, redirect_status, response_signal,
};
use crate::records::{ContentRecord, FetchRecord, Header};
use crate::urls::UrlPolicy;

/// One URL of the fetch list, with what fetch needs of its datum. Kept small: a
/// fetch run holds every URL of its fetch list in its queues (the host is shared by
/// all URLs of a host, the validators boxed since few URLs have them).
#[derive(Debug, Clone)]
pub struct FetchItem {
    /// The URL as in the fetch list.
    pub url: Box<str>,
    /// Its host (lower-case; shared by the host's URLs).
    pub host: Arc<str>,
    /// Score, copied to the outputs.
    pub score: f64,
    /// Depth, copied to the outputs.
    pub depth: i32,
    /// The validators of a conditional re-fetch, if any.
    pub validators: Option<Box<Validators>>,
}

/// What a page fetched before said, sent back on a re-fetch.
#[derive(Debug, Clone, Default)]
pub struct Validators {
    /// `etag` metadata, sent as If-None-Match.
    pub etag: Option<String>,
    /// `last_modified` metadata, sent as If-Modified-Since.
    pub last_modified: Option<String>,
}

impl FetchItem {
    /// The item of a fetch-list datum; `host` is the shared name of its host when the
    /// caller has one (see [`FetchItem::host_of`]).
    pub fn from_datum(mut d: CrawlDatum, host: Arc<str>) -> FetchItem {
        let mut take = |key: &str| d.metadata.remove(key).filter(|s| !s.is_empty());
        let v = Validators {
            etag: take("etag"),
            last_modified: take("last_modified"),
        };
        let validators = (v.etag.is_some() || v.last_modified.is_some()).then(|| Box::new(v));
        FetchItem {
            url: d.url.into_boxed_str(),
            host,
            score: d.score,
            depth: d.depth,
            validators,
        }
    }

    /// The host of a fetch-list datum (lower-case; from the URL when the row has none).
    pub fn host_of(d: &CrawlDatum) -> String {
        if d.host.is_empty() {
            crate::urls::host_of(&d.url)
        } else {
            d.host.to_ascii_lowercase()
        }
    }

    /// A redirect target followed from a fetch-list URL: the source's score and depth,
    /// no validators.
    pub fn redirect_target(url: &str, from: &FetchItem) -> FetchItem {
        FetchItem {
            host: Arc::from(crate::urls::host_of(url)),
            url: url.into(),
            score: from.score,
            depth: from.depth,
            validators: None,
        }
    }

    /// The `etag` sent as If-None-Match, if any.
    pub fn etag(&self) -> Option<&String> {
        self.validators.as_ref().and_then(|v| v.etag.as_ref())
    }

    /// The `last_modified` sent as If-Modified-Since, if any.
    pub fn last_modified(&self) -> Option<&String> {
        self.validators
            .as_ref()
            .and_then(|v| v.last_modified.as_ref())
    }

    /// A crawl_fetch row for this URL with no response (not attempted, denied, failed).
    pub fn record(&self, status: FetchStatus, reason: &str) -> FetchRecord {
        FetchRecord {
            url: self.url.to_string(),
            host: self.host.to_string(),
            status,
            reason: reason.to_string(),
            fetch_time: now_millis(),
            http_status: None,
            content_type: None,
            content_length: None,
            redirect_target: None,
            etag: None,
            last_modified: None,
            response_time_ms: None,
            score: self.score,
            depth: self.depth,
        }
    }

    /// The output for a URL that got no response.
    pub fn without_response(&self, status: FetchStatus, reason: &str) -> Output {
        Output {
            record: self.record(status, reason),
            content: None,
        }
    }
}

/// Fetches `url` (the parsed `item.url`) and maps the result.
pub async fn fetch_page(
    http: &Http,
    policy: &UrlPolicy,
    item: &FetchItem,
    url: &url::Url,
    cap: usize,
) -> (Output, HostSignal) {
    let mut headers: Vec<(HeaderName, String)> = Vec::new();
    if let Some(e) = item.etag() {
        headers.push((IF_NONE_MATCH, e.clone()));
    }
    if let Some(lm) = item.last_modified() {
        headers.push((IF_MODIFIED_SINCE, lm.clone()));
    }
    let resp = match http.get(url, &headers, cap).await {
        Ok(r) => r,
        Err(e) => {
            let reason = classify_error(e.as_ref());
            tracing::debug!("{}: {reason}: {e}", item.url);
            return (
                item.without_response(FetchStatus::FetchRetry, reason),
                failure_signal(reason),
            );
        }
    };
    let now = now_millis();
    let code = resp.status;
    let mut rec = item.record(FetchStatus::FetchRetry, "");
    rec.fetch_time = now;
    rec.http_status = Some(i32::from(code));
    rec.content_type = resp.header("content-type").map(str::to_string);
    rec.etag = resp.header("etag").map(str::to_string);
    rec.last_modified = resp.header("last-modified").map(str::to_string);
    rec.response_time_ms = Some(resp.elapsed.as_millis() as i64);
    let (status, reason) = status_of(code, resp.header("location"), url, policy, item, &mut rec);
    rec.status = status;
    rec.reason = reason;
    if status == FetchStatus::FetchNotmodified {
        // Keep the validators known so the next round can ask again.
        rec.etag = rec.etag.or_else(|| item.etag().cloned());
        rec.last_modified = rec.last_modified.or_else(|| item.last_modified().cloned());
    }
    // A 2xx or 3xx is Continue.
    let signal = response_signal(code, resp.header("retry-after"), now);
    let content = if status == FetchStatus::FetchSuccess {
        if resp.truncated {
            rec.reason = "truncated".to_string();
        }
        rec.content_length = Some(resp.body.len() as i64);
        Some(content_record(item, &rec, resp, now))
    } else {
        None
    };
    (
        Output {
            record: rec,
            content,
        },
        signal,
    )
}

/// The status and reason of a response with HTTP status `code`; a redirect's target
/// (`location` resolved against `url`, checked by the URL policy) goes into `rec`.
fn status_of(
    code: u16,
    location: Option<&str>,
    url: &url::Url,
    policy: &UrlPolicy,
    item: &FetchItem,
    rec: &mut FetchRecord,
) -> (FetchStatus, String) {
    if let Some(sr) = classify_http(code) {
        return sr;
    }
    let target = location.and_then(|loc| url.join(loc.trim()).ok());
    match target {
        None => (FetchStatus::FetchGone, "bad_redirect".to_string()),
        Some(t) => match policy.check_url(t) {
            Ok(n) => {
                rec.redirect_target = Some(n.to_string());
                (redirect_status(code), format!("http_{code}"))
            }
            Err(rej) => {
                tracing::debug!("{}: redirect target rejected: {rej}", item.url);
                (redirect_status(code), "redirect_filtered".to_string())
            }
        },
    }
}

/// Response headers as the `content` dataset stores them: in order, names lowercase,
/// values as text (invalid UTF-8 replaced).
pub(super) fn stored_headers(headers: &reqwest::header::HeaderMap) -> Vec<Header> {
    headers
        .iter()
        .map(|(n, v)| Header {
            name: n.as_str().to_string(),
            value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
        })
        .collect()
}

/// The content row of a page fetched (2xx) at `now`, whose crawl_fetch row is `rec`.
fn content_record(item: &FetchItem, rec: &FetchRecord, resp: Fetched, now: i64) -> ContentRecord {
    ContentRecord {
        url: item.url.to_string(),
        host: item.host.to_string(),
        fetch_time: now,
        http_status: i32::from(resp.status),
        content_type: rec.content_type.clone(),
        headers: stored_headers(&resp.headers),
        content: resp.body,
        truncated: resp.truncated,
        ip_address: resp.remote_addr.map(|a| a.ip().to_string()),
        score: item.score,
        depth: item.depth,
        rendered: None,
        render_status: None,
    }
}
