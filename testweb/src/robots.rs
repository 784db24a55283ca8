//! The robots.txt of each host: its groups, their text, and the exact verdict for
//! the crawler's agent `trawl`.

use serde::{Deserialize, Serialize};

/// The agent name the site map's `disallowed` flags are computed for.
pub const CRAWLER_AGENT: &str = "trawl";

/// One `User-agent` group of a robots.txt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotsGroup {
    /// The `User-agent` values of the group (`*` for everyone).
    pub agents: Vec<String>,
    /// `Disallow` path prefixes (an empty value allows everything).
    pub disallow: Vec<String>,
    /// `Allow` path prefixes.
    pub allow: Vec<String>,
    /// `Crawl-delay` in seconds, if the group sets one.
    #[serde(default)]
    pub crawl_delay: Option<u32>,
}

/// A host's robots.txt: absent (404), failing (500), or a list of groups.
///
/// Rules are path patterns as in RFC 9309: a prefix, where `*` matches any run of
/// characters and a final `$` anchors the end; the longest matching pattern wins and
/// `Allow` wins a tie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Robots {
    /// The groups; `None` when the host has no robots.txt (served as 404).
    pub groups: Option<Vec<RobotsGroup>>,
    /// robots.txt answers 500: per RFC 9309 the whole host counts as disallowed.
    #[serde(default)]
    pub unavailable: bool,
    /// Bytes of `#` comment lines appended after the groups (an oversized robots.txt).
    #[serde(default)]
    pub padding_bytes: usize,
    /// `/robots.txt` answers 301 to this path, which serves the groups.
    #[serde(default)]
    pub moved_to: Option<String>,
    /// `Sitemap:` lines appended after the groups (absolute sitemap URLs).
    #[serde(default)]
    pub sitemaps: Vec<String>,
}

impl Robots {
    /// The variant for host `i`: the pattern cycles so every kind is present in a
    /// web of 4 or more hosts.
    /// - `i % 4 == 0`: `*` may not fetch `/private/`.
    /// - `i % 4 == 1`: `otherbot` may not fetch `/other/`; `*` may not fetch `/private/`.
    /// - `i % 4 == 2`: no robots.txt (404): everything allowed.
    /// - `i % 4 == 3`: `otherbot` may fetch nothing; `*` has an empty Disallow (all allowed).
    pub fn for_host(i: usize) -> Robots {
        let g = |agents: &[&str], disallow: &[&str]| RobotsGroup {
            agents: agents.iter().map(|s| s.to_string()).collect(),
            disallow: disallow.iter().map(|s| s.to_string()).collect(),
            allow: Vec::new(),
            crawl_delay: None,
        };
        let groups = match i % 4 {
            0 => Some(vec![g(&["*"], &["/private/"])]),
            1 => Some(vec![
                g(&["otherbot"], &["/other/"]),
                g(&["*"], &["/private/"]),
            ]),
            2 => None,
            _ => Some(vec![g(&["otherbot"], &["/"]), g(&["*"], &[""])]),
        };
        Robots {
            groups,
            unavailable: false,
            padding_bytes: 0,
            moved_to: None,
            sitemaps: Vec::new(),
        }
    }

    /// One group: `*` may not fetch `/private/` (host 0's variant); the hostile and
    /// sitemap hosts start from it.
    pub fn private_disallowed() -> Robots {
        Robots::for_host(0)
    }

    /// The HTTP status of `/robots.txt`: 500, 200, or 404 when there is none.
    pub fn status(&self) -> u16 {
        if self.unavailable {
            500
        } else if self.moved_to.is_some() {
            301
        } else if self.groups.is_some() {
            200
        } else {
            404
        }
    }

    /// The robots.txt body (at `moved_to` when set), or `None` when the host has none.
    pub fn text(&self) -> Option<String> {
        if self.unavailable {
            return None;
        }
        let groups = self.groups.as_ref()?;
        let mut out = String::from("# robots.txt of a trawl test host\n");
        for (n, g) in groups.iter().enumerate() {
            if n > 0 {
                out.push('\n');
            }
            for a in &g.agents {
                out.push_str(&format!("User-agent: {a}\n"));
            }
            for p in &g.allow {
                out.push_str(&format!("Allow: {p}\n"));
            }
            for p in &g.disallow {
                out.push_str(&format!("Disallow: {p}\n"));
            }
            if let Some(d) = g.crawl_delay {
                out.push_str(&format!("Crawl-delay: {d}\n"));
            }
        }
        if !self.sitemaps.is_empty() {
            out.push('\n');
            for s in &self.sitemaps {
                out.push_str(&format!("Sitemap: {s}\n"));
            }
        }
        let line = "# padding to make this robots.txt larger than crawlers must read\n";
        while out.len() < self.padding_bytes {
            out.push_str(line);
        }
        Some(out)
    }

    /// The group that applies to `agent`: the one naming it (case-insensitive), else `*`.
    pub fn group_for(&self, agent: &str) -> Option<&RobotsGroup> {
        let groups = self.groups.as_ref()?;
        let agent = agent.to_ascii_lowercase();
        groups
            .iter()
            .find(|g| g.agents.iter().any(|a| a.to_ascii_lowercase() == agent))
            .or_else(|| groups.iter().find(|g| g.agents.iter().any(|a| a == "*")))
    }

    /// Whether `agent` may fetch `path` (longest matching prefix wins; Allow wins ties).
    pub fn allowed(&self, agent: &str, path: &str) -> bool {
        if self.unavailable {
            return false;
        }
        let Some(g) = self.group_for(agent) else {
            return true;
        };
        let path = decode_unreserved(path);
        let longest = |rules: &[String]| {
            rules
                .iter()
                .map(|p| decode_unreserved(p))
                .filter(|p| !p.is_empty() && pattern_matches(p, &path))
                .map(|p| p.len())
                .max()
        };
        match (longest(&g.disallow), longest(&g.allow)) {
            (None, _) => true,
            (Some(d), Some(a)) => a >= d,
            (Some(_), None) => false,
        }
    }

    /// The Disallow patterns in effect for `agent` (`/` when robots.txt fails).
    pub fn disallowed_prefixes(&self, agent: &str) -> Vec<String> {
        if self.unavailable {
            return vec!["/".to_string()];
        }
        self.group_for(agent)
            .map(|g| {
                g.disallow
                    .iter()
                    .filter(|p| !p.is_empty())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `s` with the escapes of unreserved characters (`%70` for `p`) decoded: RFC 9309
/// 2.2.2 compares a rule and a path so (the rules of the test web use no other escapes).
pub fn decode_unreserved(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let decoded = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(|v| v.is_ascii_alphanumeric() || b"-._~".contains(v));
        match decoded {
            Some(v) if b[i] == b'%' => {
                out.push(char::from(v));
                i += 3;
            }
            _ => {
                let len = s[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&s[i..i + len]);
                i += len;
            }
        }
    }
    out
}

/// Whether a robots.txt path pattern matches `path` (`*` wildcard, final `$` anchor).
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let (body, anchored) = match pattern.strip_suffix('$') {
        Some(b) => (b, true),
        None => (pattern, false),
    };
    let pieces: Vec<&str> = body.split('*').collect();
    let Some((first, rest)) = pieces.split_first() else {
        return true;
    };
    let Some(mut tail) = path.strip_prefix(first) else {
        return false;
    };
    if rest.is_empty() {
        return !anchored || tail.is_empty();
    }
    let last = rest.len() - 1;
    for (n, piece) in rest.iter().enumerate() {
        if n == last && anchored {
            return tail.ends_with(piece);
        }
        match tail.find(piece) {
            Some(at) => tail = &tail[at + piece.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_match_texting_robots() {
        for i in 0..4 {
            let r = Robots::for_host(i);
            let Some(text) = r.text() else {
                assert!(r.allowed(CRAWLER_AGENT, "/private/s1.html"));
                continue;
            };
            for agent in [CRAWLER_AGENT, "otherbot"] {
                let tr = texting_robots::Robot::new(agent, text.as_bytes()).unwrap();
                for path in ["/", "/p1.html", "/private/s1.html", "/other/o1.html"] {
                    assert_eq!(
                        r.allowed(agent, path),
                        tr.allowed(path),
                        "host {i} agent {agent} path {path}\n{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn wildcards_and_anchors() {
        assert!(pattern_matches("/*.cgi$", "/a/script.cgi"));
        assert!(!pattern_matches("/*.cgi$", "/script.cgi.html"));
        assert!(pattern_matches("/tmp", "/tmp/x.html"));
        assert!(pattern_matches("/a*b*c", "/axxbyyczz"));
        assert!(!pattern_matches("/a*b*c", "/axxcyyb"));
        assert!(pattern_matches("/x$", "/x"));
        assert!(!pattern_matches("/x$", "/xy"));
    }

    #[test]
    fn other_agents_group_does_not_apply_to_trawl() {
        let r = Robots::for_host(1);
        assert!(r.allowed(CRAWLER_AGENT, "/other/o1.html"));
        assert!(!r.allowed("otherbot", "/other/o1.html"));
        assert!(!r.allowed(CRAWLER_AGENT, "/private/s1.html"));
        let r = Robots::for_host(3);
        assert!(r.allowed(CRAWLER_AGENT, "/private/s1.html"));
        assert!(!r.allowed("otherbot", "/"));
    }
}
