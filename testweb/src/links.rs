//! The spellings a link to a given target can take in HTML: absolute, protocol-relative,
//! root-relative, relative, `./x`, `../x`, with fragments or session ids that
//! normalization removes.

use url::Url;

use super::rng::Rng;

/// Writes an `href` for `target` as it would appear on a page whose base URL is `base`.
/// Whatever the spelling, resolving it against `base` and normalizing gives `target`.
pub fn href_for(rng: &mut Rng, base: &Url, target: &Url) -> String {
    let same_origin = base.scheme() == target.scheme()
        && base.host_str() == target.host_str()
        && base.port() == target.port();
    let host = target.host_str().unwrap_or_default();
    let path = target.path();
    let mut href = if !same_origin {
        match rng.below(4) {
            0 => format!("//{host}{path}"),
            1 => format!("http://{}{path}", shout(host)),
            _ => target.as_str().to_string(),
        }
    } else {
        match rng.below(6) {
            0 => target.as_str().to_string(),
            1 => path.to_string(),
            2 | 3 => relative(base.path(), path, false),
            4 => relative(base.path(), path, true),
            _ => up_relative(base.path(), path),
        }
    };
    // Decorations normalization strips.
    match rng.below(10) {
        0 | 1 => href.push_str(&format!("#s{}", rng.below(5))),
        2 if !href.contains('?') && !href.ends_with('/') => {
            href.push_str(&format!(";jsessionid={:08X}", rng.next_u64() as u32))
        }
        3 if !href.contains('?') => href.push_str(&format!("?sid={}", rng.below(1000))),
        _ => {}
    }
    href
}

/// Upper-cases the first label of a host (`SITE1.web.test`): hosts are case-insensitive.
fn shout(host: &str) -> String {
    match host.split_once('.') {
        Some((first, rest)) => format!("{}.{rest}", first.to_ascii_uppercase()),
        None => host.to_ascii_uppercase(),
    }
}

/// Directory segments of a path (everything before the last `/`).
fn dir_segments(path: &str) -> Vec<&str> {
    let dir = &path[..path.rfind('/').map(|i| i + 1).unwrap_or(0)];
    dir.split('/').filter(|s| !s.is_empty()).collect()
}

/// A relative reference from the document at `from` to `to` (both absolute paths).
fn relative(from: &str, to: &str, dot: bool) -> String {
    let base_dir = dir_segments(from);
    let target_dir = dir_segments(to);
    let file = &to[to.rfind('/').map(|i| i + 1).unwrap_or(0)..];
    let common = base_dir
        .iter()
        .zip(&target_dir)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = String::new();
    for _ in common..base_dir.len() {
        out.push_str("../");
    }
    for seg in &target_dir[common..] {
        out.push_str(seg);
        out.push('/');
    }
    out.push_str(file);
    if out.is_empty() {
        // Linking to the directory itself ("/" from "/p1.html").
        return "./".to_string();
    }
    if dot && !out.starts_with("../") {
        out.insert_str(0, "./");
    }
    out
}

/// A relative reference that climbs one level too many first (`../x` from the root is
/// clamped to the root by URL resolution).
fn up_relative(from: &str, to: &str) -> String {
    let base_dir = dir_segments(from);
    let mut out = "../".repeat(base_dir.len() + 1);
    out.push_str(to.trim_start_matches('/'));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl::config::UrlConfig;
    use trawl::urls::UrlPolicy;

    #[test]
    fn every_spelling_resolves_to_the_target() {
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        let mut rng = Rng::new(5);
        let urls = [
            "http://site0.web.test/",
            "http://site0.web.test/p3.html",
            "http://site0.web.test/private/s1.html",
            "http://site0.web.test/other/o1.html",
            "http://site1.web.test/p2.html",
            "http://site1.web.test/",
        ];
        for base in &urls {
            for target in &urls {
                let b = Url::parse(base).unwrap();
                let t = Url::parse(target).unwrap();
                for _ in 0..40 {
                    let href = href_for(&mut rng, &b, &t);
                    let got = policy.check_relative(&b, &href).unwrap();
                    assert_eq!(got.as_str(), *target, "base {base} href {href}");
                }
            }
        }
    }
}
