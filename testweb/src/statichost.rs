//! Static hosts: a directory tree served as one host of the test web
//! (`testweb serve --static HOST=DIR`), for crawling a real site on loopback (the
//! Rust book the toolchain ships, say) next to the generated web.
//!
//! A request for `/a/b.html` on `HOST` answers the file `DIR/a/b.html`; a directory
//! answers its `index.html` when the path ends with `/` and a 301 to the path with
//! the `/` added when it does not (as web servers do, so relative links resolve);
//! anything else, including paths that would leave `DIR` (`..`, an encoded `/`, a
//! symbolic link pointing outside), answers 404. The content type comes from the file
//! name's extension ([`content_type`]). Files are read when requested, nothing is
//! copied or cached, and the site map knows nothing of static hosts.

use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use trawl::error::{Error, IoContext, Result};

/// One host served from a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticHost {
    /// The host name (lower case, no port).
    pub name: String,
    /// The directory, canonical (symbolic links resolved).
    pub root: PathBuf,
}

/// What a request path on a static host answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StaticAnswer {
    /// 200 with this file's bytes.
    File(PathBuf),
    /// 301 to this path (a directory asked for without its trailing `/`).
    Redirect(String),
    /// 404.
    NotFound,
}

impl StaticHost {
    /// `name` served from `dir`, which must be a directory.
    pub fn new(name: &str, dir: &Path) -> Result<StaticHost> {
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        {
            return Err(Error::input(
                name,
                "a static host needs a host name of letters, digits, '.' and '-' (e.g. book.web.test)",
            ));
        }
        let root = dir.canonicalize().at(dir)?;
        if !root.is_dir() {
            return Err(Error::input(
                dir.display().to_string(),
                "the directory of a static host is not a directory",
            ));
        }
        Ok(StaticHost { name, root })
    }

    /// What the request path `path` (as sent, percent-encoded, without query)
    /// answers.
    pub fn resolve(&self, path: &str) -> StaticAnswer {
        let Some(rel) = relative_path(path) else {
            return StaticAnswer::NotFound;
        };
        let Ok(target) = self.root.join(&rel).canonicalize() else {
            return StaticAnswer::NotFound;
        };
        if !target.starts_with(&self.root) {
            return StaticAnswer::NotFound;
        }
        if target.is_dir() {
            if !path.ends_with('/') {
                return StaticAnswer::Redirect(format!("{path}/"));
            }
            let index = target.join("index.html");
            return if index.is_file() {
                StaticAnswer::File(index)
            } else {
                StaticAnswer::NotFound
            };
        }
        if target.is_file() {
            StaticAnswer::File(target)
        } else {
            StaticAnswer::NotFound
        }
    }
}

impl FromStr for StaticHost {
    type Err = Error;

    /// `HOST=DIR`.
    fn from_str(s: &str) -> Result<StaticHost> {
        let (host, dir) = s.split_once('=').ok_or_else(|| {
            Error::input(
                s,
                "a static host is HOST=DIR (e.g. book.web.test=/usr/share/doc/rust/html/book)",
            )
        })?;
        StaticHost::new(host, Path::new(dir))
    }
}

/// The request path as a relative file path: percent-decoded, `.` and empty
/// segments dropped; `None` when a segment is `..`, holds a `/`, `\` or NUL once
/// decoded, or the bytes are not UTF-8.
fn relative_path(path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for seg in path.split('/') {
        let seg = percent_decode(seg)?;
        if seg.is_empty() || seg == "." {
            continue;
        }
        if seg == ".." || seg.contains(['/', '\\', '\0']) {
            return None;
        }
        // One normal component, nothing else (a Windows prefix cannot occur here).
        let mut comps = Path::new(&seg).components();
        match (comps.next(), comps.next()) {
            (Some(Component::Normal(_)), None) => out.push(&seg),
            _ => return None,
        }
    }
    Some(out)
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The `Content-Type` of a file, by its extension (case-insensitive);
/// `application/octet-stream` for unknown ones.
pub fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" | "map" => "application/json",
        "txt" | "md" => "text/plain; charset=utf-8",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "gz" => "application/gzip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, StaticHost) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("site");
        std::fs::create_dir_all(root.join("sub/empty")).unwrap();
        std::fs::write(root.join("index.html"), "<h1>home</h1>").unwrap();
        std::fs::write(root.join("sub/index.html"), "<h1>sub</h1>").unwrap();
        std::fs::write(root.join("sub/a b.css"), "p{}").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("leak.txt")).unwrap();
        let host = format!("Book.web.test={}", root.display()).parse().unwrap();
        (dir, host)
    }

    #[test]
    fn files_directories_and_refusals() {
        let (_d, h) = tree();
        assert_eq!(h.name, "book.web.test");
        let file = |p: &str| StaticAnswer::File(h.root.join(p));
        assert_eq!(h.resolve("/"), file("index.html"));
        assert_eq!(h.resolve("/index.html"), file("index.html"));
        assert_eq!(h.resolve("/sub/"), file("sub/index.html"));
        assert_eq!(h.resolve("/sub"), StaticAnswer::Redirect("/sub/".into()));
        assert_eq!(h.resolve("/sub/a%20b.css"), file("sub/a b.css"));
        assert_eq!(h.resolve("/./sub//a%20b.css"), file("sub/a b.css"));
        for bad in [
            "/sub/empty/",
            "/missing.html",
            "/../secret.txt",
            "/sub/%2e%2e/%2e%2e/secret.txt",
            "/sub%2F..%2F..%2Fsecret.txt",
            "/%zz",
            "/%ff.html",
            "/leak.txt",
        ] {
            assert_eq!(h.resolve(bad), StaticAnswer::NotFound, "{bad}");
        }
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!("book.web.test".parse::<StaticHost>().is_err());
        assert!(
            "book.web.test=/no/such/dir/anywhere"
                .parse::<StaticHost>()
                .is_err()
        );
        assert!("bad host=/".parse::<StaticHost>().is_err());
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(
            content_type(Path::new("a/b.HTML")),
            "text/html; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.woff2")), "font/woff2");
        assert_eq!(content_type(Path::new("noext")), "application/octet-stream");
    }
}
