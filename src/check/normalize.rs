//! `check normalize URL...`: each URL through normalization and every `[urls]`
//! filter, one line each (Nutch's URLNormalizerChecker and URLFilterChecker).

use std::io::Write;

use serde::Serialize;

use crate::config::{Config, UrlScope};
use crate::error::Result;
use crate::urls::UrlPolicy;

/// One URL's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The URL as given.
    pub input: String,
    /// The normalized URL, when it could be normalized.
    pub normalized: Option<String>,
    /// Whether a crawl would admit it.
    pub accepted: bool,
    /// The rejection code (`filtered`, `out_of_scope`, ...), when rejected.
    pub reason: Option<String>,
    /// What the rejection means (the filter file's line, the scope, ...).
    pub detail: Option<String>,
}

/// Checks `urls` against the configuration's normalization and filters. The scope
/// (`urls.scope` = `host` or `domain`) is checked against `seed_hosts`; with no seed
/// hosts it is not checked (every host is in scope).
pub fn check(cfg: &Config, seed_hosts: &[String], urls: &[String]) -> Result<Vec<Decision>> {
    let mut ucfg = cfg.urls.clone();
    if seed_hosts.is_empty() {
        ucfg.scope = UrlScope::Any;
    }
    let policy = UrlPolicy::new(&ucfg, seed_hosts)?;
    Ok(urls.iter().map(|u| decide(&policy, u)).collect())
}

fn decide(policy: &UrlPolicy, input: &str) -> Decision {
    let parsed = url::Url::parse(input.trim())
        .map_err(|e| crate::urls::Reject::Syntax(e.to_string()))
        .and_then(|u| policy.normalize(u));
    let (normalized, outcome) = match parsed {
        Ok(n) => {
            let outcome = policy.check_normalized(&n);
            (Some(n.to_string()), outcome)
        }
        Err(r) => (None, Err(r)),
    };
    match outcome {
        Ok(()) => Decision {
            input: input.to_string(),
            normalized,
            accepted: true,
            reason: None,
            detail: None,
        },
        Err(r) => Decision {
            input: input.to_string(),
            normalized,
            accepted: false,
            reason: Some(r.code().to_string()),
            detail: Some(r.to_string()),
        },
    }
}

/// Prints the decisions, one tab-separated line each:
/// `accepted|rejected  NORMALIZED  INPUT  [REASON: DETAIL]`.
pub fn print(out: &mut dyn Write, decisions: &[Decision], scope_checked: bool) -> Result<()> {
    for d in decisions {
        let line = format!(
            "{}\t{}\t{}{}",
            if d.accepted { "accepted" } else { "rejected" },
            d.normalized.as_deref().unwrap_or("-"),
            d.input,
            match (&d.reason, &d.detail) {
                (Some(r), Some(m)) => format!("\t{r}: {m}"),
                _ => String::new(),
            }
        );
        writeln!(out, "{line}").map_err(super::stdout_err)?;
    }
    if !scope_checked {
        tracing::info!(
            "urls.scope was not checked: give --seed-host HOST (repeatable) to check it as a crawl seeded with those hosts would"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_then_filters() {
        let cfg = Config::default();
        let d = check(
            &cfg,
            &[],
            &[
                "HTTP://Example.COM:80/a/../b#frag".to_string(),
                "ftp://example.com/".to_string(),
                "not a url".to_string(),
            ],
        )
        .unwrap();
        assert!(d[0].accepted);
        assert_eq!(d[0].normalized.as_deref(), Some("http://example.com/b"));
        assert!(!d[1].accepted);
        assert_eq!(d[1].reason.as_deref(), Some("scheme"));
        assert_eq!(d[2].reason.as_deref(), Some("bad_syntax"));
        assert_eq!(d[2].normalized, None);
    }
}
