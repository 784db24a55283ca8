//! Host patterns, as `fetch.resolve` and `fetch.delays` key their tables: an exact
//! host name, `*.suffix` (any subdomain of `suffix`, not `suffix` itself) or `*`
//! (any host). Names compare case-insensitively, a trailing dot ignored; the most
//! specific pattern wins (exact names, then longer suffixes, then `*`).

/// One host pattern.
#[derive(Debug, Clone, PartialEq)]
enum Pattern {
    Any,
    Exact(String),
    Suffix(String),
}

fn normalize(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

impl Pattern {
    fn parse(p: &str) -> Pattern {
        let p = normalize(p);
        if p == "*" {
            Pattern::Any
        } else if let Some(rest) = p.strip_prefix("*.") {
            Pattern::Suffix(format!(".{rest}"))
        } else {
            Pattern::Exact(p)
        }
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Exact(h) => h == host,
            Pattern::Suffix(s) => host.len() > s.len() && host.ends_with(s.as_str()),
        }
    }

    /// More specific patterns first: exact names, then longer suffixes, then `*`.
    fn rank(&self) -> (u8, usize) {
        match self {
            Pattern::Exact(h) => (0, usize::MAX - h.len()),
            Pattern::Suffix(s) => (1, usize::MAX - s.len()),
            Pattern::Any => (2, 0),
        }
    }
}

/// A table of host patterns with a value each.
#[derive(Debug, Clone)]
pub struct HostPatterns<T> {
    rules: Vec<(Pattern, T)>,
}

impl<T> Default for HostPatterns<T> {
    fn default() -> Self {
        HostPatterns { rules: Vec::new() }
    }
}

impl<T> HostPatterns<T> {
    /// The table of `(pattern, value)` entries.
    pub fn new(entries: impl IntoIterator<Item = (String, T)>) -> Self {
        let mut rules: Vec<(Pattern, T)> = entries
            .into_iter()
            .map(|(p, v)| (Pattern::parse(&p), v))
            .collect();
        rules.sort_by_key(|(p, _)| p.rank());
        HostPatterns { rules }
    }

    /// The value of the most specific pattern matching `host`, if any.
    pub fn get(&self, host: &str) -> Option<&T> {
        let host = normalize(host);
        self.rules
            .iter()
            .find(|(p, _)| p.matches(&host))
            .map(|(_, v)| v)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_specific_pattern_wins() {
        let t = HostPatterns::new([
            ("*".to_string(), 0),
            ("*.web.test".to_string(), 1),
            ("*.a.web.test".to_string(), 2),
            ("Exact.web.test.".to_string(), 3),
        ]);
        assert_eq!(t.get("exact.WEB.test"), Some(&3));
        assert_eq!(t.get("x.a.web.test"), Some(&2));
        assert_eq!(
            t.get("a.web.test"),
            Some(&1),
            "*.a.web.test needs a subdomain"
        );
        assert_eq!(t.get("site0.web.test."), Some(&1));
        assert_eq!(t.get("web.test"), Some(&0), "*.web.test needs a subdomain");
        assert_eq!(HostPatterns::<u8>::default().get("a"), None);
    }
}
