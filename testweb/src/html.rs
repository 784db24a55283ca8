//! Writes the HTML of a page and records every `href` in document order.

/// One piece of a paragraph: plain text or an inline link.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Words.
    Text(String),
    /// `<a href=href>anchor</a>`.
    Link {
        /// The raw `href` attribute.
        href: String,
        /// The anchor text.
        anchor: String,
    },
}

/// Builds one HTML document.
#[derive(Debug, Default)]
pub struct PageBuilder {
    head: String,
    body: String,
    hrefs: Vec<String>,
}

/// Escapes text for element content and double-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

impl PageBuilder {
    /// A document with `title`, an optional robots meta value and an optional `<base href>`.
    pub fn new(title: &str, meta_robots: Option<&str>, base: Option<&str>) -> Self {
        let mut head = format!(
            "<meta charset=\"utf-8\">\n<title>{}</title>\n",
            escape(title)
        );
        if let Some(m) = meta_robots {
            head.push_str(&format!(
                "<meta name=\"robots\" content=\"{}\">\n",
                escape(m)
            ));
        }
        if let Some(b) = base {
            head.push_str(&format!("<base href=\"{}\">\n", escape(b)));
        }
        PageBuilder {
            head,
            body: String::new(),
            hrefs: Vec::new(),
        }
    }

    fn link(&mut self, href: &str, anchor: &str) -> String {
        self.hrefs.push(href.to_string());
        format!("<a href=\"{}\">{}</a>", escape(href), escape(anchor))
    }

    /// A `<nav>` list of links.
    pub fn nav(&mut self, links: &[(String, String)]) {
        if links.is_empty() {
            return;
        }
        self.body.push_str("<nav><ul>\n");
        for (href, anchor) in links {
            let a = self.link(href, anchor);
            self.body.push_str(&format!("<li>{a}</li>\n"));
        }
        self.body.push_str("</ul></nav>\n");
    }

    /// An `<h1>`.
    pub fn heading(&mut self, text: &str) {
        self.body.push_str(&format!("<h1>{}</h1>\n", escape(text)));
    }

    /// A `<p>` of text with inline links.
    pub fn paragraph(&mut self, pieces: &[Piece]) {
        self.body.push_str("<p>");
        for (n, piece) in pieces.iter().enumerate() {
            if n > 0 {
                self.body.push(' ');
            }
            match piece {
                Piece::Text(t) => self.body.push_str(&escape(t)),
                Piece::Link { href, anchor } => {
                    let a = self.link(href, anchor);
                    self.body.push_str(&a);
                }
            }
        }
        self.body.push_str("</p>\n");
    }

    /// A `<ul>` of links under a heading.
    pub fn link_list(&mut self, heading: &str, links: &[(String, String)]) {
        if links.is_empty() {
            return;
        }
        self.body.push_str(&format!(
            "<h2>{}</h2>\n<ul class=\"links\">\n",
            escape(heading)
        ));
        for (href, anchor) in links {
            let a = self.link(href, anchor);
            self.body.push_str(&format!("<li>{a}</li>\n"));
        }
        self.body.push_str("</ul>\n");
    }

    /// The document bytes and its `href`s in document order.
    pub fn finish(self) -> (Vec<u8>, Vec<String>) {
        let doc = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n{}</head>\n<body>\n{}</body>\n</html>\n",
            self.head, self.body
        );
        (doc.into_bytes(), self.hrefs)
    }
}
