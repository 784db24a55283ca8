//! What every key accepts, and the checks that refuse the rest with a message naming
//! the key, its line, the value, what is allowed and the default.
//!
//! One table ([`RULES`]) states each key's range; the file is checked against it
//! before serde reads it (so a value of the wrong type or out of range is refused
//! with this module's message, never serde's), and each section's `validate()` checks
//! its typed values against the same table after flags override them.

use std::fmt;

use serde::Serialize;

use super::MAX_INTERVAL_SECS;
use super::{
    Config, CountMode, GraphSource, PartitionKey, QueueMode, RESOURCE_TYPES, Schedule, Teleport,
    UrlScope,
};

/// One day in seconds: the longest delay, timeout or wait a key may set.
const DAY: f64 = 86_400.0;
/// One year in seconds: the longest run-time limit a key may set.
const YEAR: f64 = 365.0 * DAY;

/// What a key accepts.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// An integer in `[min, max]` (`max == i64::MAX`: no upper bound).
    Int(i64, i64),
    /// A finite number between `min` and `max` (`f64::MAX`: no upper bound); the bounds
    /// are excluded when `open_min` / `open_max`.
    Num {
        min: f64,
        max: f64,
        open_min: bool,
        open_max: bool,
    },
    /// Any finite number, or `-inf` (a lower bound that is off).
    FloorOrNegInf,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A non-empty list of these strings.
    ListOf(&'static [&'static str]),
    /// A non-empty string without control characters.
    Text,
}

/// `[min, max]`.
const fn closed(min: f64, max: f64) -> Rule {
    Rule::Num {
        min,
        max,
        open_min: false,
        open_max: false,
    }
}

/// `(0, max]`.
const fn positive(max: f64) -> Rule {
    Rule::Num {
        min: 0.0,
        max,
        open_min: true,
        open_max: false,
    }
}

/// Any finite number >= `min`.
const fn at_least(min: f64) -> Rule {
    closed(min, f64::MAX)
}

const UNBOUNDED: i64 = i64::MAX;

/// Every checked key: `section.key`, what it accepts, and the unit named in messages
/// (empty when none). docs/config.md lists the same ranges.
const RULES: &[(&str, Rule, &str)] = &[
    ("crawl.dir", Rule::Text, ""),
    ("crawl.partitions", Rule::Int(1, 4096), ""),
    ("crawl.partition_key", Rule::OneOf(PartitionKey::NAMES), ""),
    ("crawl.threads", Rule::Int(0, 1024), ""),
    ("urls.schemes", Rule::ListOf(&["http", "https"]), ""),
    ("urls.max_length", Rule::Int(1, 65_536), "bytes"),
    ("urls.scope", Rule::OneOf(UrlScope::NAMES), ""),
    ("urls.max_depth", Rule::Int(0, 1_000_000), ""),
    ("inject.score", at_least(f64::MIN), ""),
    (
        "inject.fetch_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("inject.sort_buffer_rows", Rule::Int(1, UNBOUNDED), "rows"),
    ("generate.top_n", Rule::Int(1, UNBOUNDED), ""),
    ("generate.max_per_host", Rule::Int(0, UNBOUNDED), ""),
    ("generate.count_mode", Rule::OneOf(CountMode::NAMES), ""),
    ("generate.min_score", Rule::FloorOrNegInf, ""),
    (
        "generate.gen_delay",
        Rule::Int(0, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("generate.host_max_failures", Rule::Int(0, UNBOUNDED), ""),
    (
        "generate.host_backoff",
        Rule::Int(0, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("generate.host_time_budget", closed(0.0, YEAR), "seconds"),
    ("fetch.user_agent", Rule::Text, ""),
    ("fetch.robots_agent", Rule::Text, ""),
    ("fetch.max_connections", Rule::Int(1, 65_536), ""),
    ("fetch.per_host_connections", Rule::Int(1, 65_536), ""),
    ("fetch.delay", closed(0.0, DAY), "seconds"),
    ("fetch.max_crawl_delay", closed(0.0, DAY), "seconds"),
    ("fetch.connect_timeout", positive(DAY), "seconds"),
    ("fetch.read_timeout", positive(DAY), "seconds"),
    ("fetch.total_timeout", positive(DAY), "seconds"),
    ("fetch.max_content_bytes", Rule::Int(1, 1 << 30), "bytes"),
    ("fetch.time_limit", closed(0.0, YEAR), "seconds"),
    ("fetch.lease_ttl", closed(0.0, DAY), "seconds"),
    ("fetch.lease_wait", closed(0.0, DAY), "seconds"),
    ("fetch.checkpoint_interval", closed(0.0, DAY), "seconds"),
    ("fetch.min_throughput", at_least(0.0), "URLs per second"),
    ("fetch.min_throughput_window", positive(DAY), "seconds"),
    ("fetch.min_throughput_after", closed(0.0, YEAR), "seconds"),
    ("fetch.max_host_exceptions", Rule::Int(0, UNBOUNDED), ""),
    ("fetch.max_retry_after", closed(0.0, DAY), "seconds"),
    ("fetch.queue_mode", Rule::OneOf(QueueMode::NAMES), ""),
    ("fetch.adaptive_delay_factor", closed(0.0, 1000.0), ""),
    ("fetch.min_delay", closed(0.0, DAY), "seconds"),
    ("fetch.max_delay", closed(0.0, DAY), "seconds"),
    (
        "fetch.robots_cache_ttl",
        closed(0.0, DAY),
        "seconds (24 h, RFC 9309)",
    ),
    ("fetch.follow_redirects", Rule::Int(0, 20), ""),
    ("fetch.render.max_pages", Rule::Int(1, 256), "pages"),
    ("fetch.render.timeout", positive(3600.0), "seconds"),
    ("fetch.render.settle_time", closed(0.0, 60.0), "seconds"),
    (
        "fetch.render.resource_types",
        Rule::ListOf(RESOURCE_TYPES),
        "",
    ),
    ("parse.max_outlinks", Rule::Int(0, UNBOUNDED), ""),
    (
        "parse.max_anchor_length",
        Rule::Int(0, UNBOUNDED),
        "characters",
    ),
    ("parse.max_page_bytes", Rule::Int(1, UNBOUNDED), "bytes"),
    (
        "parse.max_page_millis",
        Rule::Int(0, 86_400_000),
        "milliseconds",
    ),
    ("parse.max_document_pages", Rule::Int(1, UNBOUNDED), "pages"),
    (
        "parse.max_document_millis",
        Rule::Int(100, 86_400_000),
        "milliseconds",
    ),
    (
        "parse.max_document_memory_mb",
        Rule::Int(64, 1_048_576),
        "MiB",
    ),
    (
        "updatedb.retry_interval",
        Rule::Int(0, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("updatedb.max_retries", Rule::Int(0, 1000), ""),
    (
        "updatedb.default_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    (
        "updatedb.max_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("updatedb.schedule", Rule::OneOf(Schedule::NAMES), ""),
    ("updatedb.sort_buffer_rows", Rule::Int(1, UNBOUNDED), "rows"),
    (
        "linkdb.max_anchor_length",
        Rule::Int(0, UNBOUNDED),
        "characters",
    ),
    ("linkdb.max_inlinks", Rule::Int(1, UNBOUNDED), ""),
    (
        "pagerank.damping",
        Rule::Num {
            min: 0.0,
            max: 1.0,
            open_min: false,
            open_max: true,
        },
        "",
    ),
    ("pagerank.tolerance", at_least(0.0), ""),
    ("pagerank.max_iterations", Rule::Int(1, 1_000_000), ""),
    ("pagerank.source", Rule::OneOf(GraphSource::NAMES), ""),
    ("pagerank.teleport", Rule::OneOf(Teleport::NAMES), ""),
    ("sitemaps.max_depth", Rule::Int(0, 100), ""),
    (
        "sitemaps.refetch_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    (
        "sitemaps.max_urls",
        Rule::Int(1, 50_000),
        "(the protocol's limit)",
    ),
    (
        "sitemaps.max_bytes",
        Rule::Int(1, 52_428_800),
        "bytes (50 MB, the protocol's limit)",
    ),
    ("sitemaps.max_sitemaps", Rule::Int(1, UNBOUNDED), ""),
    ("sitemaps.default_priority", closed(0.0, 1.0), ""),
    ("index.max_anchors", Rule::Int(0, 10_000), ""),
    ("index.max_text_bytes", Rule::Int(1, 104_857_600), "bytes"),
    ("index.writer_memory_mb", Rule::Int(16, 65_536), "MB"),
];

/// The rule of the values of each ruled free map (its keys are host patterns), as
/// `(section.map, rule, unit)`: `[fetch.delays]` holds seconds like `fetch.delay`.
const MAP_RULES: &[(&str, Rule, &str)] = &[("fetch.delays", closed(0.0, DAY), "seconds")];

/// Sections whose keys are free (host patterns), not a fixed set.
const FREE_MAPS: &[&str] = &["fetch.delays", "fetch.resolve"];

/// Sections inside a section, with fixed keys (`[fetch.render]`).
const SUBSECTIONS: &[&str] = &["fetch.render"];

/// `(subsection, key)` when `section.rest` names a key of a subsection
/// (`fetch.render.timeout` is key `timeout` of `fetch.render`).
pub(super) fn subsection_of<'a>(section: &str, rest: &'a str) -> Option<(&'a str, &'a str)> {
    let (sub, key) = rest.split_once('.')?;
    let full = format!("{section}.{sub}");
    (SUBSECTIONS.contains(&full.as_str()) && !key.is_empty()).then_some((sub, key))
}

/// The value at a dotted `path` (`render.timeout`) inside `table`.
fn get_path<'a>(table: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut parts = path.split('.');
    let mut v = table.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(v)
}

/// `(map, entry)` when `section.rest` names an entry of a free map
/// (`fetch.resolve.*.web.test` is entry `*.web.test` of `fetch.resolve`).
pub(super) fn free_map_of<'a>(section: &str, rest: &'a str) -> Option<(&'a str, &'a str)> {
    let (map, entry) = rest.split_once('.')?;
    let full = format!("{section}.{map}");
    (FREE_MAPS.contains(&full.as_str()) && !entry.is_empty()).then_some((map, entry))
}

impl Rule {
    /// Whether `v` satisfies the rule.
    fn accepts(self, v: &toml::Value) -> bool {
        let number = || match v {
            toml::Value::Float(f) => Some(*f),
            toml::Value::Integer(i) => Some(*i as f64),
            _ => None,
        };
        match self {
            Rule::Int(min, max) => v.as_integer().is_some_and(|i| (min..=max).contains(&i)),
            Rule::Num {
                min,
                max,
                open_min,
                open_max,
            } => number().is_some_and(|f| {
                f.is_finite()
                    && if open_min { f > min } else { f >= min }
                    && if open_max { f < max } else { f <= max }
            }),
            Rule::FloorOrNegInf => {
                number().is_some_and(|f| f.is_finite() || f == f64::NEG_INFINITY)
            }
            Rule::OneOf(allowed) => v.as_str().is_some_and(|s| allowed.contains(&s)),
            Rule::ListOf(allowed) => v.as_array().is_some_and(|items| {
                !items.is_empty()
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| allowed.contains(&s)))
            }),
            Rule::Text => v
                .as_str()
                .is_some_and(|s| !s.trim().is_empty() && !s.chars().any(char::is_control)),
        }
    }

    /// What the rule accepts, for messages and docs: "an integer from 1 to 4096".
    fn describe(self, unit: &str) -> String {
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        let quoted = |allowed: &[&str]| {
            allowed
                .iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Rule::Int(min, UNBOUNDED) => format!("an integer >= {min}{unit}"),
            Rule::Int(min, max) => format!("an integer from {min} to {max}{unit}"),
            Rule::Num { min, .. } if min == f64::MIN => format!("a finite number{unit}"),
            Rule::Num {
                min,
                max,
                open_min,
                open_max,
            } => match (open_min, open_max, max == f64::MAX) {
                (false, _, true) => format!("a finite number >= {min}{unit}"),
                (true, _, true) => format!("a finite number > {min}{unit}"),
                (false, false, false) => format!("a number from {min} to {max}{unit}"),
                (true, false, false) => format!("a number above {min} and up to {max}{unit}"),
                (false, true, false) => {
                    format!("a number from {min} up to (not including) {max}{unit}")
                }
                (true, true, false) => {
                    format!("a number between {min} and {max} (both excluded){unit}")
                }
            },
            Rule::FloorOrNegInf => "a finite number, or -inf (no minimum)".into(),
            Rule::OneOf(allowed) => format!("one of {}", quoted(allowed)),
            Rule::ListOf(allowed) => format!("a non-empty list of {}", quoted(allowed)),
            Rule::Text => "a non-empty string without control characters".into(),
        }
    }
}

/// Shows a value as TOML spells it (strings quoted, `nan`, `inf`), cut to 80 characters.
fn show(v: &toml::Value) -> String {
    let s = match v {
        // One line whatever the string holds (control characters escaped).
        toml::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// The value at `section.key` (or `section.sub.key`) of a parsed document.
fn lookup<'a>(table: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    get_path(table, key)
}

/// The 1-based line where `path` (section, key, ...) is written in `text`, if found.
fn line_of(text: &str, path: &[&str]) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut span = None;
    for (i, name) in path.iter().enumerate() {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == name)?;
        span = Some(k.span());
        if i + 1 < path.len() {
            match v.get_ref() {
                toml::de::DeValue::Table(t) => table = t,
                _ => return None,
            }
        }
    }
    let start = span?.start;
    Some(text.get(..start)?.matches('\n').count() + 1)
}

/// Edit distance of two short strings (for "did you mean").
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known key nearest to `key` (`section.key`), when near enough to be a typo or a
/// key put in the wrong section.
fn nearest<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    let name = key.rsplit('.').next().unwrap_or(key);
    if let Some(k) = known
        .iter()
        .find(|k| k.rsplit('.').next() == Some(name) && k.as_str() != key)
    {
        return Some(k);
    }
    let (d, best) = known
        .iter()
        .map(|k| (distance(key, k), k.as_str()))
        .min_by_key(|(d, _)| *d)?;
    (d <= (key.len() / 3).max(2)).then_some(best)
}

/// Every `section.key` of the configuration (sections alone for the free maps).
fn known_keys() -> Vec<String> {
    let mut keys = Vec::new();
    if let Ok(defaults) = toml::Table::try_from(Config::default()) {
        for (section, value) in &defaults {
            if let Some(t) = value.as_table() {
                keys.extend(t.keys().map(|k| format!("{section}.{k}")));
                for (k, v) in t {
                    let sub = format!("{section}.{k}");
                    if let (true, Some(inner)) = (SUBSECTIONS.contains(&sub.as_str()), v.as_table())
                    {
                        keys.extend(inner.keys().map(|k| format!("{sub}.{k}")));
                    }
                }
            }
        }
    }
    // Keys whose default (None) does not serialize.
    keys.push("urls.filter_file".into());
    keys.sort();
    keys
}

/// Refuses keys and sections the configuration does not have, suggesting the nearest.
pub(super) fn check_known(raw: &toml::Table, text: &str) -> Result<(), String> {
    let known = known_keys();
    let mut sections: Vec<&str> = known
        .iter()
        .filter_map(|k| k.split_once('.').map(|(s, _)| s))
        .collect();
    sections.dedup();
    let refuse = |what: &str, name: &str, path: &[&str], hint: Option<&str>| {
        let line = line_of(text, path).map_or(String::new(), |l| format!(" (line {l})"));
        let hint = hint.map_or(String::new(), |k| format!("; did you mean {k}?"));
        Err(format!(
            "unknown {what} {name}{line}{hint} (every key is listed in data/trawl.toml and docs/config.md)"
        ))
    };
    for (section, value) in raw {
        let Some(table) = value.as_table() else {
            return refuse("key", section, &[section], nearest(section, &known));
        };
        if !sections.contains(&section.as_str()) {
            let hint = sections
                .iter()
                .map(|s| (distance(section, s), *s))
                .min_by_key(|(d, _)| *d)
                .filter(|(d, _)| *d <= 2)
                .map(|(_, s)| format!("[{s}]"));
            return refuse(
                "section",
                &format!("[{section}]"),
                &[section],
                hint.as_deref(),
            );
        }
        for (key, value) in table {
            let full = format!("{section}.{key}");
            if SUBSECTIONS.contains(&full.as_str()) {
                let Some(inner) = value.as_table() else {
                    return refuse("key", &full, &[section, key], None);
                };
                for k in inner.keys() {
                    let sub = format!("{full}.{k}");
                    if !known.contains(&sub) {
                        return refuse("key", &sub, &[section, key, k], nearest(&sub, &known));
                    }
                }
                continue;
            }
            if FREE_MAPS.contains(&full.as_str()) || known.contains(&full) {
                continue;
            }
            return refuse("key", &full, &[section, key], nearest(&full, &known));
        }
    }
    Ok(())
}

/// Checks the values of the file before serde reads them, section by section in the
/// order of [`RULES`]; `text` (the file) locates the line of a refused value.
pub(super) fn check_file(raw: &toml::Table, text: &str) -> Result<(), String> {
    let mut sections: Vec<&str> = RULES
        .iter()
        .filter_map(|(key, ..)| key.split_once('.').map(|(s, _)| s))
        .collect();
    sections.dedup();
    for section in sections {
        if let Some(values) = raw.get(section).and_then(toml::Value::as_table) {
            check_values(section, values, Some(text))?;
        }
    }
    Ok(())
}

/// Checks the typed values of one section (after flags overrode some of them).
pub(super) fn check_section<T: Serialize>(section: &str, values: &T) -> Result<(), String> {
    let table =
        toml::Table::try_from(values).map_err(|e| format!("a value is out of range: {e}"))?;
    check_values(section, &table, None)
}

/// Refuses a `low` key above a `high` key of `section`, each given as `(name, value)`.
pub(super) fn not_above<T: PartialOrd + fmt::Display>(
    section: &str,
    (low, low_value): (&str, T),
    (high, high_value): (&str, T),
) -> Result<(), String> {
    if low_value > high_value {
        return Err(format!(
            "{section}.{low} = {low_value} is above {section}.{high} = {high_value}: {low} must not exceed {high}"
        ));
    }
    Ok(())
}

/// The name of `key` (`section.name`) inside `section`, when it is in that section.
fn in_section<'a>(key: &'a str, section: &str) -> Option<&'a str> {
    key.strip_prefix(section)?.strip_prefix('.')
}

/// Checks every ruled key of `section` present in `values` (the section's table), and
/// the values of its ruled free maps; `text` (the file) locates the line.
fn check_values(section: &str, values: &toml::Table, text: Option<&str>) -> Result<(), String> {
    let refuse = |key: &str, path: &[&str], v: &toml::Value, rule: Rule, unit: &str| {
        let line = text
            .and_then(|t| line_of(t, path))
            .map_or(String::new(), |l| format!(" (line {l})"));
        let defaults = toml::Table::try_from(Config::default()).unwrap_or_default();
        let default = lookup(&defaults, key)
            .map_or(String::new(), |d| format!("; the default is {}", show(d)));
        Err(format!(
            "{key} = {}{line} is not allowed: expected {}{default}",
            show(v),
            rule.describe(unit)
        ))
    };
    for &(key, rule, unit) in RULES {
        let Some(name) = in_section(key, section) else {
            continue;
        };
        match get_path(values, name) {
            Some(v) if !rule.accepts(v) => {
                let mut path = vec![section];
                path.extend(name.split('.'));
                return refuse(key, &path, v, rule, unit);
            }
            _ => {}
        }
    }
    for &(map, rule, unit) in MAP_RULES {
        let Some(name) = in_section(map, section) else {
            continue;
        };
        let Some(entries) = values.get(name).and_then(toml::Value::as_table) else {
            continue;
        };
        for (pattern, v) in entries {
            if !rule.accepts(v) {
                let key = format!("{map}.\"{pattern}\"");
                return refuse(&key, &[section, name, pattern], v, rule, unit);
            }
        }
    }
    Ok(())
}

/// The allowed values of every checked key, as `(section.key, description)`, in the
/// order of the sections (docs/config.md and data/trawl.toml state the same).
pub fn allowed_values() -> Vec<(String, String)> {
    let maps = MAP_RULES
        .iter()
        .map(|&(map, rule, unit)| (format!("{map}.<pattern>"), rule.describe(unit)));
    RULES
        .iter()
        .map(|&(key, rule, unit)| (key.to_string(), rule.describe(unit)))
        .chain(maps)
        .collect()
}
