//! Robots directives of a page: `<meta name="robots">` (and the crawler's own
//! agent name) plus the `X-Robots-Tag` response header.

/// The directives that apply to a page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RobotsDirectives {
    /// Do not index.
    pub noindex: bool,
    /// Do not follow the page's links.
    pub nofollow: bool,
    /// Do not keep a cached copy.
    pub noarchive: bool,
}

impl RobotsDirectives {
    /// Applies one comma- or space-separated directive list (`noindex, nofollow`).
    pub fn apply(&mut self, list: &str) {
        for d in list
            .split([',', ' ', '\t'])
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
            match d.to_ascii_lowercase().as_str() {
                "noindex" => self.noindex = true,
                "nofollow" => self.nofollow = true,
                "noarchive" => self.noarchive = true,
                "none" => {
                    self.noindex = true;
                    self.nofollow = true;
                }
                _ => {}
            }
        }
    }

    /// Applies one `X-Robots-Tag` value. A value starting with `agent:` applies only
    /// when `agent` is `agent_name` (case-insensitive); a plain list applies to all.
    pub fn apply_header(&mut self, value: &str, agent_name: &str) {
        if let Some((head, rest)) = value.split_once(':') {
            let head = head.trim();
            // "unavailable_after: <date>" is a directive, not an agent.
            let is_agent =
                !head.contains([',', ' ']) && !head.eq_ignore_ascii_case("unavailable_after");
            if is_agent {
                if head.eq_ignore_ascii_case(agent_name) {
                    self.apply(rest);
                }
                return;
            }
        }
        self.apply(value);
    }
}

/// Whether a `<meta name=...>` applies to us: `robots` or our agent's name.
pub fn meta_name_applies(name: &str, agent_name: &str) -> bool {
    let n = name.trim();
    n.eq_ignore_ascii_case("robots")
        || (!agent_name.is_empty() && n.eq_ignore_ascii_case(agent_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_lists() {
        let mut r = RobotsDirectives::default();
        r.apply("NOINDEX,follow");
        assert!(r.noindex && !r.nofollow && !r.noarchive);
        let mut r = RobotsDirectives::default();
        r.apply("none");
        assert!(r.noindex && r.nofollow);
        let mut r = RobotsDirectives::default();
        r.apply(" noarchive  nofollow ");
        assert!(r.noarchive && r.nofollow && !r.noindex);
        assert!(meta_name_applies(" Robots", "trawl"));
        assert!(meta_name_applies("TRAWL", "trawl"));
        assert!(!meta_name_applies("googlebot", "trawl"));
    }

    #[test]
    fn header_values() {
        let mut r = RobotsDirectives::default();
        r.apply_header("googlebot: noindex", "trawl");
        assert_eq!(r, RobotsDirectives::default());
        r.apply_header("trawl: nofollow", "trawl");
        assert!(r.nofollow && !r.noindex);
        r.apply_header("noarchive, noindex", "trawl");
        assert!(r.noarchive && r.noindex);
        let mut r = RobotsDirectives::default();
        r.apply_header("unavailable_after: 25 Jun 2010 15:00:00 PST", "trawl");
        assert_eq!(r, RobotsDirectives::default());
    }
}
