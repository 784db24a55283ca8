//! RSS and Atom feeds: the feed's title, each item's title and summary as text, each
//! item's link as an outlink with the item's title as anchor (Nutch's `parse-rss` /
//! `feed` plugins). Read in `parse` itself: quick-xml streams the feed and expands no
//! entities but the five predefined ones and character references.

use quick_xml::events::Event;

use super::{DocLink, Extracted};

/// Whether `bytes` is a feed: its first element is `<rss>`, `<feed>` (Atom) or
/// `<rdf:RDF>` (RSS 1.0), within the first kilobyte.
pub fn sniff(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1024)];
    let mut rest = head;
    while let Some(i) = rest.iter().position(|&b| b == b'<') {
        rest = &rest[i + 1..];
        match rest.first() {
            Some(b'?') | Some(b'!') => continue,
            _ => {
                return rest.starts_with(b"rss")
                    || rest.starts_with(b"feed")
                    || rest.starts_with(b"rdf:RDF");
            }
        }
    }
    false
}

/// The feed's title, text and item links.
pub fn extract(bytes: &[u8]) -> Result<Extracted, String> {
    let mut reader = quick_xml::Reader::from_reader(bytes);
    let mut buf = Vec::new();
    let mut out = Extracted::default();
    // Local names of the open elements.
    let mut stack: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut item: Option<(String, Option<String>)> = None;
    let mut items = 0usize;
    let mut lines: Vec<String> = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|e| {
            format!(
                "malformed feed XML at byte {}: {e}",
                reader.error_position()
            )
        })?;
        match event {
            Event::Start(ref s) | Event::Empty(ref s) => {
                let name = s.local_name().as_ref().to_string();
                if name == "item" || name == "entry" {
                    item = Some((String::new(), None));
                    items += 1;
                }
                if name == "link"
                    && let Some((_, link)) = item.as_mut()
                {
                    // Atom: <link href=".." rel="alternate"/> (rel defaults to alternate).
                    let mut href = None;
                    let mut rel = None;
                    for a in s.attributes().flatten() {
                        match a.key.local_name().as_ref() {
                            "href" => href = Some(a.value.to_string()),
                            "rel" => rel = Some(a.value.to_string()),
                            _ => {}
                        }
                    }
                    if let Some(h) = href
                        && rel.as_deref().is_none_or(|r| r == "alternate")
                        && link.is_none()
                    {
                        *link = Some(h.replace("&amp;", "&"));
                    }
                }
                text.clear();
                if matches!(event, Event::Start(_)) {
                    stack.push(name);
                }
            }
            Event::Text(ref t) => text.push_str(&t.xml10_content()),
            Event::CData(t) => text.push_str(&t.into_inner()),
            Event::GeneralRef(ref r) => {
                if let Some(c) = crate::xml::entity_char(r) {
                    text.push(c);
                }
            }
            Event::End(_) => {
                let name = stack.pop().unwrap_or_default();
                let value = text.trim().to_string();
                text.clear();
                match name.as_str() {
                    "title" => {
                        if let Some((title, _)) = item.as_mut() {
                            *title = value.clone();
                        } else if out.title.is_none() && !value.is_empty() {
                            out.title = Some(value.clone());
                        }
                        push_line(&mut lines, &value);
                    }
                    "link" => {
                        if let Some((_, link)) = item.as_mut()
                            && link.is_none()
                            && !value.is_empty()
                        {
                            *link = Some(value);
                        }
                    }
                    "description" | "summary" | "content" | "subtitle" => {
                        push_line(&mut lines, &strip_tags(&value));
                    }
                    "item" | "entry" => {
                        if let Some((title, Some(href))) = item.take() {
                            out.links.push(DocLink {
                                href,
                                anchor: title,
                            });
                        }
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out.text = lines.join("\n");
    out.metadata.insert("items".into(), items.to_string());
    Ok(out)
}

fn push_line(lines: &mut Vec<String>, s: &str) {
    let s = super::super::text::collapse(s);
    if !s.is_empty() {
        lines.push(s);
    }
}

/// Text of a description that holds escaped HTML: tags removed, a space in their place.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_and_atom_items_become_links() {
        let rss = br#"<?xml version="1.0"?><rss version="2.0"><channel><title>River News</title>
            <link>http://a.test/</link><description>All about &amp; rivers</description>
            <item><title>Flood warning</title><link>http://a.test/flood</link>
            <description>&lt;p&gt;Levels &lt;b&gt;rising&lt;/b&gt;&lt;/p&gt;</description></item>
            <item><title>Dry summer</title><link>http://a.test/dry</link></item></channel></rss>"#;
        assert!(sniff(rss));
        let x = extract(rss).unwrap();
        assert_eq!(x.title.as_deref(), Some("River News"));
        let links: Vec<(&str, &str)> = x
            .links
            .iter()
            .map(|l| (l.href.as_str(), l.anchor.as_str()))
            .collect();
        assert_eq!(
            links,
            [
                ("http://a.test/flood", "Flood warning"),
                ("http://a.test/dry", "Dry summer")
            ]
        );
        assert!(x.text.contains("Levels rising"), "{}", x.text);
        assert!(x.text.contains("All about & rivers"), "{}", x.text);
        assert_eq!(x.metadata["items"], "2");

        let atom = br#"<feed xmlns="http://www.w3.org/2005/Atom"><title>Log</title>
            <entry><title>One</title><link rel="edit" href="/e/1"/><link href="/posts/1?a=1&amp;b=2"/>
            <summary>First post</summary></entry></feed>"#;
        assert!(sniff(atom));
        let x = extract(atom).unwrap();
        assert_eq!(x.links[0].href, "/posts/1?a=1&b=2");
        assert_eq!(x.links[0].anchor, "One");
        assert!(!sniff(b"<?xml version='1.0'?><html><body>x</body></html>"));
        assert!(!sniff(b"<!DOCTYPE html><html>"));
    }
}
