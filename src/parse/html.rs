//! One iterative walk over the DOM (html5ever via `scraper`) that gathers
//! everything parse needs: title, metadata, robots directives, base, canonical,
//! raw links with anchors, headings, and the visible text cut into blocks (with
//! the block-level element tree and its link text) for main-content scoring.
//!
//! The walk uses `ego_tree`'s `traverse` (open/close edges, no recursion), so a
//! page nested 100,000 levels deep cannot overflow the stack.

use ego_tree::iter::Edge;
use scraper::{Html, Node};

use super::robots_meta::{RobotsDirectives, meta_name_applies};
use super::text::{collapse, push_collapsed};

/// A link as written in the page (not yet resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLink {
    /// The element (`a`, `area`, `frame`, `iframe`, `meta`).
    pub tag: &'static str,
    /// The attribute value as written (entities decoded by the parser).
    pub href: String,
    /// Visible text of the link, whitespace collapsed (may be empty).
    pub text: String,
    /// `alt` of the first image inside (or of the `area`).
    pub alt: String,
    /// Whether `rel` contains `nofollow`.
    pub nofollow: bool,
}

/// A run of visible text between block-level boundaries.
#[derive(Debug, Clone)]
pub struct Block {
    /// Text, whitespace collapsed.
    pub text: String,
    /// Chars of it inside links.
    pub link_chars: usize,
    /// Index in [`Extract::elems`] of the innermost enclosing block element.
    pub elem: Option<usize>,
    /// Number of enclosing elements that look like boilerplate (class/id/tag).
    pub boiler_depth: u32,
}

/// A block-level element, with the range of blocks it contains.
#[derive(Debug, Clone)]
pub struct ElemInfo {
    /// Its tag name.
    pub tag: &'static str,
    /// The enclosing block element.
    pub parent: Option<usize>,
    /// First block inside it.
    pub start: usize,
    /// One past the last block inside it.
    pub end: usize,
    /// Readability-style class/id weight (+25 content-like, -25 boilerplate-like).
    pub class_weight: i32,
    /// Boilerplate-looking ancestors (itself excluded).
    pub boiler_depth: u32,
    /// Whether it looks like boilerplate itself: a boilerplate-like class or id (even
    /// next to a content-like one: `share-text`, `comment-content`), a caption, credit
    /// or dateline class, or the tag (nav, footer, aside, header, form, menu, figure,
    /// figcaption).
    pub boiler: bool,
    /// Whether its boilerplate look comes only from a name that page builders also
    /// give the article's own boxes (`widget`, `meta`, `header`, ...; see
    /// [`ClassKind::weak`]).
    pub weak_boiler: bool,
}

impl ElemInfo {
    /// Whether it looks like boilerplate itself (see [`ElemInfo::boiler`]).
    pub fn is_boiler(&self) -> bool {
        self.boiler
    }
}

/// What the walk found.
#[derive(Debug, Clone, Default)]
pub struct Extract {
    /// `<title>`, collapsed.
    pub title: Option<String>,
    /// `lang` of `<html>`.
    pub lang: Option<String>,
    /// First `<base href>`.
    pub base_href: Option<String>,
    /// `link[rel=canonical]` href.
    pub canonical: Option<String>,
    /// `meta[name=description]`.
    pub description: Option<String>,
    /// `meta[name=keywords]`.
    pub keywords: Option<String>,
    /// Meta robots directives.
    pub robots: RobotsDirectives,
    /// Links in document order.
    pub links: Vec<RawLink>,
    /// (level, text) of h1-h3.
    pub headings: Vec<(u8, String)>,
    /// (level, id, text) of the h1-h3 a link can point at (`page.html#id`): the
    /// heading's own `id`, else that of an `<a id|name>` in it, else the fragment of a
    /// link in it to itself (`<a class="headerlink" href="#id">`).
    pub sections: Vec<(u8, String, String)>,
    /// Visible text blocks in document order.
    pub blocks: Vec<Block>,
    /// Block-level elements in document order.
    pub elems: Vec<ElemInfo>,
}

impl Extract {
    /// All visible text, blocks joined by single spaces.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.blocks.iter().map(|b| b.text.len() + 1).sum());
        for b in &self.blocks {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&b.text);
        }
        out
    }
}

/// The tag as a `'static` name when it is a block-level element (a boundary
/// between text blocks and a candidate for main-text scoring).
fn block_tag(tag: &str) -> Option<&'static str> {
    Some(match tag {
        "address" => "address",
        "article" => "article",
        "aside" => "aside",
        "blockquote" => "blockquote",
        "body" => "body",
        "center" => "center",
        "dd" => "dd",
        "details" => "details",
        "dialog" => "dialog",
        "dir" => "dir",
        "div" => "div",
        "dl" => "dl",
        "dt" => "dt",
        "fieldset" => "fieldset",
        "figcaption" => "figcaption",
        "figure" => "figure",
        "footer" => "footer",
        "form" => "form",
        "h1" => "h1",
        "h2" => "h2",
        "h3" => "h3",
        "h4" => "h4",
        "h5" => "h5",
        "h6" => "h6",
        "header" => "header",
        "hgroup" => "hgroup",
        "hr" => "hr",
        "li" => "li",
        "main" => "main",
        "menu" => "menu",
        "nav" => "nav",
        "ol" => "ol",
        "p" => "p",
        "pre" => "pre",
        "section" => "section",
        "summary" => "summary",
        "table" => "table",
        "tbody" => "tbody",
        "thead" => "thead",
        "tfoot" => "tfoot",
        "tr" => "tr",
        "td" => "td",
        "th" => "th",
        "ul" => "ul",
        "caption" => "caption",
        "option" => "option",
        "legend" => "legend",
        "html" => "html",
        "frameset" => "frameset",
        _ => return None,
    })
}

/// Elements whose text is not visible.
fn is_hidden(tag: &str) -> bool {
    matches!(
        tag,
        "script"
            | "style"
            | "template"
            | "noscript"
            | "head"
            | "iframe"
            | "object"
            | "svg"
            | "math"
            | "select"
            | "textarea"
            | "button"
            | "canvas"
            | "audio"
            | "video"
            | "map"
    )
}

/// An element's attributes, looked up by scanning the element's short list
/// (scraper's `attr()` interns the name on every call, which is costly when
/// done for several names per element).
struct Attrs<'a> {
    el: &'a scraper::node::Element,
}

impl<'a> Attrs<'a> {
    fn of(el: &'a scraper::node::Element) -> Self {
        Attrs { el }
    }

    fn get(&self, name: &str) -> Option<&'a str> {
        self.el.attrs().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// `hidden` attribute, or an inline style with `display:none` / `visibility:hidden`.
/// React's streamed server rendering sends a page's content late in a hidden
/// segment (`<div hidden id="S:0">`) that its script swaps into place on load: that
/// content is what a reader sees, so such a segment is visible.
fn hidden_by_attr(a: &Attrs<'_>) -> bool {
    if collapsed_panel(a) {
        return false;
    }
    if a.get("hidden").is_some() && !a.get("id").is_some_and(react_segment) {
        return true;
    }
    if a.get("class").is_some_and(|c| {
        c.split_ascii_whitespace()
            .any(|w| SCREEN_READER_ONLY.iter().any(|s| w.eq_ignore_ascii_case(s)))
    }) {
        return true;
    }
    a.get("style").is_some_and(|st| {
        let compact: String = st
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        compact.contains("display:none") || compact.contains("visibility:hidden")
    })
}

/// An accordion's or a tab set's panel (WAI-ARIA: `role="region"` or `"tabpanel"`,
/// or labelled by its heading with `aria-labelledby`): hidden by an inline style
/// until the reader opens it, its text is the page's (an FAQ's answers, a guide's
/// steps). So is an element `hidden="until-found"` (the browser opens it when a
/// search finds its text). A dialog labelled the same way (a newsletter pop-up)
/// stays hidden.
fn collapsed_panel(a: &Attrs<'_>) -> bool {
    if a.get("hidden")
        .is_some_and(|h| h.eq_ignore_ascii_case("until-found"))
    {
        return true;
    }
    match a.get("role") {
        Some(r) => r.eq_ignore_ascii_case("region") || r.eq_ignore_ascii_case("tabpanel"),
        None => a.get("aria-labelledby").is_some(),
    }
}

/// Class names of text for screen readers only, which the style sheets of the
/// common frameworks (Bootstrap, WordPress, Drupal, ...) move off screen: "Share on
/// Facebook (opens in a new window)", "Skip to content".
const SCREEN_READER_ONLY: &[&str] = &[
    "sr-only",
    "screen-reader-text",
    "screen-reader-only",
    "visually-hidden",
    "visuallyhidden",
    "u-visually-hidden",
    "element-invisible",
    "a11y-hidden",
];

/// Parts of class names of pop-ups shown on hover: tooltips, popovers, hover cards.
const POPUP: &[&str] = &["tooltip", "popover", "hovercard", "hover-card", "rollover"];

/// Whether `class` names a pop-up ([`POPUP`], any case). The walk asks it of every
/// inline element with a class: it compares in place, without a lowercased copy.
fn popup_named(class: &str) -> bool {
    let class = class.as_bytes();
    POPUP.iter().any(|p| {
        class
            .windows(p.len())
            .any(|w| w.eq_ignore_ascii_case(p.as_bytes()))
    })
}

/// Whether `id` names a segment of React's streamed server rendering: `S:` and a
/// hexadecimal number.
fn react_segment(id: &str) -> bool {
    id.strip_prefix("S:")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Class and id names of what is not the article (readability's "unlikely
/// candidates" and negative names, and more).
const NEGATIVE: &[&str] = &[
    "comment",
    "footer",
    "footnote",
    "foot",
    "sidebar",
    "sponsor",
    "advert",
    "share",
    "social",
    "related",
    "banner",
    "promo",
    "masthead",
    "popup",
    "cookie",
    "subscribe",
    "newsletter",
    "byline",
    "author",
    "combx",
    "disqus",
    "login",
    "modal",
    "outbrain",
    "rss",
    "shoutbox",
    "shopping",
    "taboola",
    "signup",
];
/// Negative names that page builders and CSS-module sites also give the article's
/// own boxes (`elementor-widget-text-editor`, `WidgetWrapper_...`, `entry-meta`
/// next to `entry-content`), and names of lists of links (`nav`, `menu`, `tags`),
/// which a box of prose is not whatever it is called (`content-nav-section`): weak
/// evidence, overruled by prose inside.
const WEAK_NEGATIVE: &[&str] = &[
    "nav",
    "menu",
    "breadcrumb",
    "skip",
    "toolbar",
    "tags",
    "pager",
    "pagination",
    "widget",
    "meta",
    "extra",
    "header",
    "hidden",
    "print",
    "community",
];
const POSITIVE: &[&str] = &[
    "article", "body", "content", "entry", "hentry", "main", "post", "text", "blog", "story",
    "column",
];

/// Names (substrings of a class or id) of what is never the article's text even
/// inside it: captions and photo credits.
const CAPTION: &[&str] = &["caption", "credit"];
/// Class or id words (whole words: `date` is not `update`) of datelines and ad slots.
const CAPTION_WORDS: &[&str] = &[
    "date",
    "dateline",
    "time",
    "timestamp",
    "published",
    "updated",
    "ad",
    "ads",
];

/// What an element's class and id say about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassKind {
    /// Readability's weight: -25 for boilerplate-like names, +25 for content-like
    /// ones (both may apply, per attribute).
    pub weight: i32,
    /// Whether a boilerplate-like name is there (whatever else is).
    pub boiler: bool,
    /// Whether the only boilerplate-like names are weak ones ([`WEAK_NEGATIVE`]).
    pub weak: bool,
    /// Whether it names a caption, a credit, a dateline or an ad slot.
    pub caption: bool,
}

/// The [`ClassKind`] of an element's `class` and `id`.
pub fn class_kind(class: &str, id: &str) -> ClassKind {
    let mut k = ClassKind::default();
    let mut strong = false;
    for (s, is_id) in [(class, false), (id, true)] {
        if s.is_empty() {
            continue;
        }
        // Drupal marks a node shown on the front page `node--promoted`: a state,
        // not a promotion box.
        let mut l = s.to_ascii_lowercase();
        if l.contains("promoted") {
            l = l.replace("promoted", "");
        }
        // An id of four words or more is a heading's slug
        // (`getting-into-trouble-with-shared-history`), not a role.
        let slug = is_id && l.split(['-', '_']).filter(|w| !w.is_empty()).count() >= 4;
        if !slug {
            if NEGATIVE.iter().any(|n| l.contains(n)) {
                k.weight -= 25;
                k.boiler = true;
                strong = true;
            } else if WEAK_NEGATIVE.iter().any(|n| l.contains(n)) {
                k.weight -= 25;
                k.boiler = true;
            }
        }
        if POSITIVE.iter().any(|p| l.contains(p)) {
            k.weight += 25;
        }
        // `no_caption`, `has-caption`: about the element's child, not itself.
        let names_caption = |n: &str| {
            CAPTION.iter().any(|c| n.contains(c))
                && !["no", "has", "with"].iter().any(|p| n.starts_with(p))
        };
        if l.split_ascii_whitespace().any(names_caption)
            || l.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| CAPTION_WORDS.contains(&w))
        {
            k.caption = true;
        }
    }
    k.weak = k.boiler && !strong;
    k
}

/// Readability's class/id weight (see [`ClassKind::weight`]).
pub fn class_weight(class: &str, id: &str) -> i32 {
    class_kind(class, id).weight
}

fn tag_is_boiler(tag: &str) -> bool {
    matches!(
        tag,
        "nav" | "footer" | "aside" | "header" | "form" | "menu" | "figure" | "figcaption"
    )
}

struct LinkFrame {
    tag: &'static str,
    href: String,
    text: String,
    alt: String,
    nofollow: bool,
}

enum Frame {
    /// An element that needs no action on close.
    Plain,
    /// A hidden element (decrements the hidden counter on close).
    Hidden,
    /// A block element (index into elems; whether it counts as boilerplate is its
    /// [`ElemInfo::boiler`] when it closes).
    Block(usize),
    /// A link (pops the link frame on close).
    Link,
    /// `<title>`.
    Title,
    /// An inline element named as a pop-up's trigger (decrements the trigger counter
    /// on close).
    Trigger,
}

struct Walker<'a> {
    agent: &'a str,
    out: Extract,
    hidden: u32,
    /// Inline elements named as pop-ups ([`POPUP`]) the walk is in.
    popups: u32,
    boiler: u32,
    block_stack: Vec<usize>,
    buf: String,
    /// Link chars of the block being read, in tenths of a char.
    buf_link_chars: usize,
    links: Vec<LinkFrame>,
    title: Option<String>,
    in_title: bool,
    heading: Option<(u8, String)>,
    /// The id of the heading being read, if it has one ([`Extracted::sections`]).
    heading_id: Option<String>,
    /// The id of the last `section`, `div` or `article` opened with one, while no
    /// text followed it: the id of a heading that opens it (DocBook and Sphinx put
    /// a section's id on its element, not on its heading).
    section_id: Option<String>,
}

impl Walker<'_> {
    fn flush(&mut self) {
        // `buf` is collapsed as it is filled: only a trailing space is left to trim.
        if self.buf.ends_with(' ') {
            self.buf.pop();
        }
        let text = self.buf.as_str().to_owned();
        self.buf.clear();
        let link_chars = std::mem::take(&mut self.buf_link_chars) / 10;
        if text.is_empty() {
            return;
        }
        self.section_id = None;
        self.out.blocks.push(Block {
            link_chars: link_chars.min(text.chars().count()),
            text,
            elem: self.block_stack.last().copied(),
            boiler_depth: self.boiler,
        });
    }

    fn text(&mut self, t: &str) {
        if self.in_title {
            if let Some(title) = self.title.as_mut() {
                title.push_str(t);
            }
            return;
        }
        if self.hidden > 0 {
            return;
        }
        push_collapsed(&mut self.buf, t);
        if let Some(l) = self.links.last_mut() {
            push_collapsed(&mut l.text, t);
            // Tenths of a char: a link within the page (`#fragment`: a heading's
            // permalink, a table of contents) counts 0.3 of its text, as in
            // Readability, so a heading that links to itself stays content.
            let per_char = if l.href.starts_with('#') { 3 } else { 10 };
            self.buf_link_chars += per_char * t.chars().filter(|c| !c.is_whitespace()).count();
        }
        if let Some((_, h)) = self.heading.as_mut() {
            push_collapsed(h, t);
        }
    }

    fn open(&mut self, el: &scraper::node::Element) -> Frame {
        let tag = el.name();
        let a = Attrs::of(el);
        let a = &a;
        if tag == "a" && self.heading.is_some() && self.heading_id.is_none() {
            self.heading_id = a
                .get("id")
                .or_else(|| a.get("name"))
                .or_else(|| a.get("href").and_then(|h| h.strip_prefix('#')))
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .map(str::to_string);
        }
        match tag {
            "html" if self.out.lang.is_none() => {
                self.out.lang = a
                    .get("lang")
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty());
            }
            "base" if self.out.base_href.is_none() => {
                self.out.base_href = a.get("href").map(str::to_string);
            }
            "link" => {
                let rel = a.get("rel").unwrap_or("");
                if self.out.canonical.is_none()
                    && rel
                        .split_ascii_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("canonical"))
                {
                    self.out.canonical = a.get("href").map(str::to_string);
                }
            }
            "meta" => self.meta(a),
            "img" => {
                if let (Some(l), Some(alt)) = (self.links.last_mut(), a.get("alt"))
                    && l.alt.is_empty()
                {
                    l.alt = collapse(alt);
                }
            }
            "br" => push_collapsed(&mut self.buf, " "),
            "frame" | "iframe" => {
                if let Some(src) = a.get("src") {
                    self.out.links.push(RawLink {
                        tag: if tag == "frame" { "frame" } else { "iframe" },
                        href: src.to_string(),
                        text: String::new(),
                        alt: String::new(),
                        nofollow: false,
                    });
                }
            }
            _ => {}
        }
        if tag == "title" && self.title.is_none() && self.out.title.is_none() {
            self.title = Some(String::new());
            self.in_title = true;
            return Frame::Title;
        }
        if is_hidden(tag) || hidden_by_attr(a) {
            self.hidden += 1;
            return Frame::Hidden;
        }
        if (tag == "a" || tag == "area")
            && let Some(href) = a.get("href")
        {
            let nofollow = a.get("rel").is_some_and(|r| {
                r.split_ascii_whitespace()
                    .any(|x| x.eq_ignore_ascii_case("nofollow"))
            });
            self.links.push(LinkFrame {
                tag: if tag == "a" { "a" } else { "area" },
                href: href.to_string(),
                text: String::new(),
                alt: if tag == "area" {
                    a.get("alt").map(collapse).unwrap_or_default()
                } else {
                    String::new()
                },
                nofollow,
            });
            return Frame::Link;
        }
        if let Some(h @ ("h1" | "h2" | "h3")) = block_tag(tag)
            && self.heading.is_none()
            && self.hidden == 0
        {
            self.flush();
            self.heading = Some((h.as_bytes()[1] - b'0', String::new()));
            self.heading_id = a
                .get("id")
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .or_else(|| self.section_id.take());
            return self.open_block(a, h);
        }
        if let Some(tag) = block_tag(tag) {
            self.flush();
            if matches!(tag, "section" | "div" | "article")
                && let Some(id) = a.get("id").map(str::trim).filter(|id| !id.is_empty())
            {
                self.section_id = Some(id.to_string());
            }
            return self.open_block(a, tag);
        }
        // A pop-up card inside its trigger (`<span class="tooltip">name<span
        // class="tooltiptext">...</span></span>`, a person's hover card of links in the
        // middle of a sentence) is shown on hover only: not text.
        if a.get("class").is_some_and(popup_named) {
            if self.popups > 0 {
                self.hidden += 1;
                return Frame::Hidden;
            }
            self.popups += 1;
            return Frame::Trigger;
        }
        // An inline caption, credit or dateline (`<span class=caption>`) is a block
        // of its own, so that main text can leave it out.
        if (tag == "span" || tag == "small" || tag == "time" || tag == "em")
            && a.get("class").is_some_and(|c| class_kind(c, "").caption)
        {
            self.flush();
            return self.open_block(a, "span");
        }
        Frame::Plain
    }

    fn open_block(&mut self, a: &Attrs<'_>, tag: &'static str) -> Frame {
        // A `figure` is boilerplate by its tag because it mostly frames a picture;
        // one that frames a table or a listing (`<figure class="wp-block-table">`, as
        // WordPress writes every table) frames the article's own content.
        if matches!(tag, "table" | "pre")
            && let Some(&f) = self.block_stack.last()
            && let Some(fig) = self.out.elems.get_mut(f)
            && fig.tag == "figure"
            && fig.boiler
            && fig.class_weight >= 0
        {
            fig.boiler = false;
            self.boiler = self.boiler.saturating_sub(1);
        }
        let kind = class_kind(a.get("class").unwrap_or(""), a.get("id").unwrap_or(""));
        let cw = kind.weight;
        let boiler = kind.boiler || kind.caption || tag_is_boiler(tag);
        let idx = self.out.elems.len();
        self.out.elems.push(ElemInfo {
            tag,
            parent: self.block_stack.last().copied(),
            start: self.out.blocks.len(),
            end: self.out.blocks.len(),
            class_weight: cw,
            boiler_depth: self.boiler,
            boiler,
            weak_boiler: kind.weak && !kind.caption && !tag_is_boiler(tag),
        });
        self.block_stack.push(idx);
        if boiler {
            self.boiler += 1;
        }
        Frame::Block(idx)
    }

    fn close(&mut self, frame: Frame) {
        match frame {
            Frame::Plain => {}
            Frame::Hidden => self.hidden -= 1,
            Frame::Trigger => self.popups -= 1,
            Frame::Title => {
                self.in_title = false;
                self.out.title = self
                    .title
                    .take()
                    .map(|t| collapse(&t))
                    .filter(|t| !t.is_empty());
            }
            Frame::Link => {
                if let Some(l) = self.links.pop() {
                    let text = collapse(&l.text);
                    self.out.links.push(RawLink {
                        tag: l.tag,
                        href: l.href,
                        text,
                        alt: l.alt,
                        nofollow: l.nofollow,
                    });
                }
            }
            Frame::Block(idx) => self.close_block(idx),
        }
    }

    fn close_block(&mut self, idx: usize) {
        self.flush();
        if let Some((level, h)) = self.heading.take() {
            // Only the heading's own block closes it.
            if self
                .out
                .elems
                .get(idx)
                .is_some_and(|e| e.tag.len() == 2 && e.tag.starts_with('h'))
            {
                let h = collapse(&h);
                let id = self.heading_id.take();
                if !h.is_empty() {
                    if let Some(id) = id {
                        // Without the permalink's sign (Sphinx's ¶, a trailing #).
                        let text = h.trim_end_matches(['¶', '#', '§', ' ']).to_string();
                        self.out.sections.push((level, id, text));
                    }
                    self.out.headings.push((level, h));
                }
            } else {
                self.heading = Some((level, h));
            }
        }
        let mut boiler = false;
        if let Some(e) = self.out.elems.get_mut(idx) {
            e.end = self.out.blocks.len();
            boiler = e.boiler;
        }
        self.block_stack.pop();
        if boiler {
            self.boiler = self.boiler.saturating_sub(1);
        }
    }

    fn meta(&mut self, a: &Attrs<'_>) {
        let content = a.get("content").unwrap_or("");
        if let Some(name) = a.get("name") {
            let lname = name.trim().to_ascii_lowercase();
            if meta_name_applies(&lname, self.agent) {
                self.out.robots.apply(content);
            } else if lname == "description" && self.out.description.is_none() {
                self.out.description = Some(collapse(content)).filter(|s| !s.is_empty());
            } else if lname == "keywords" && self.out.keywords.is_none() {
                self.out.keywords = Some(collapse(content)).filter(|s| !s.is_empty());
            }
        }
        if let Some(eq) = a.get("http-equiv")
            && eq.trim().eq_ignore_ascii_case("refresh")
            && let Some(url) = refresh_url(content)
        {
            self.out.links.push(RawLink {
                tag: "meta",
                href: url,
                text: String::new(),
                alt: String::new(),
                nofollow: false,
            });
        }
    }
}

/// The URL of a `<meta http-equiv=refresh content="5; url=...">`.
pub fn refresh_url(content: &str) -> Option<String> {
    let (_, rest) = content.split_once([';', ','])?;
    let rest = rest.trim_start();
    let lower = rest.to_ascii_lowercase();
    let rest = if lower.starts_with("url") {
        rest[3..].trim_start().strip_prefix('=')?.trim_start()
    } else {
        rest
    };
    let rest = rest.trim_matches(|c| c == '"' || c == '\'').trim();
    (!rest.is_empty()).then(|| rest.to_string())
}

/// Walks a parsed document; `agent` is the crawler's robots name (a
/// `<meta name="<agent>">` counts like `<meta name="robots">`).
pub fn walk(doc: &Html, agent: &str) -> Extract {
    let mut w = Walker {
        agent,
        out: Extract::default(),
        hidden: 0,
        popups: 0,
        boiler: 0,
        block_stack: Vec::new(),
        buf: String::new(),
        buf_link_chars: 0,
        links: Vec::new(),
        title: None,
        in_title: false,
        heading: None,
        heading_id: None,
        section_id: None,
    };
    let mut frames: Vec<Frame> = Vec::new();
    for edge in doc.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(el) => {
                    let f = w.open(el);
                    frames.push(f);
                }
                Node::Text(t) => w.text(t),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(_) = node.value()
                    && let Some(f) = frames.pop()
                {
                    w.close(f);
                }
            }
        }
    }
    w.flush();
    // Links still open (cannot happen with a well-formed tree) are kept.
    while let Some(l) = w.links.pop() {
        w.out.links.push(RawLink {
            tag: l.tag,
            text: collapse(&l.text),
            href: l.href,
            alt: l.alt,
            nofollow: l.nofollow,
        });
    }
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Extract {
        walk(&Html::parse_document(s), "trawl")
    }

    #[test]
    fn class_names_say_what_a_box_is() {
        let promo = class_kind("promo-box", "");
        assert!(promo.boiler && !promo.weak && promo.weight < 0);
        // Drupal's `node--promoted` is a state of the article, not a promotion.
        let node = class_kind("node node--type-recipe node--promoted", "");
        assert!(!node.boiler && node.weight == 0, "{node:?}");
        let widget = class_kind("elementor-widget-text-editor", "");
        assert!(widget.boiler && widget.weak);
        assert_eq!(class_weight("entry-content", ""), 25);
    }

    #[test]
    fn text_skips_invisible() {
        let e = ex(
            "<html lang=de><head><title> A  title </title><style>x{}</style><script>var a;</script></head>\
            <body><p>Hello <b>wor</b>ld</p><!-- c --><template>tpl</template><noscript>ns</noscript><div>next\n\nline</div>\
            <p hidden>h1</p><p style='DISPLAY: none'>h2</p><span style='visibility : hidden'>h3</span></body></html>",
        );
        assert_eq!(e.title.as_deref(), Some("A title"));
        assert_eq!(e.lang.as_deref(), Some("de"));
        assert_eq!(e.text(), "Hello world next line");
        // React's streamed segment is swapped into view by its script: visible.
        let e = ex(
            "<body><template id=B:0></template><div hidden id=S:0><p>Streamed</p></div>\
            <div hidden id=S:x><p>Not a segment</p></div><div hidden id=S:><p>Nor this</p></div></body>",
        );
        assert_eq!(e.text(), "Streamed");
        // An accordion's or a tab set's collapsed panel opens on a click: its text is
        // the page's; a dialog labelled the same way (a pop-up) is not.
        let e = ex("<body><h3 id=q1>Q1?</h3>\
            <div id=p1 role=region aria-labelledby=q1 style='display:none'><p>A1.</p></div>\
            <section role=tabpanel hidden><p>Tab two.</p></section>\
            <dd aria-labelledby=q3 hidden><p>A3.</p></dd><div hidden=until-found><p>Found.</p></div>\
            <div role=dialog aria-labelledby=t style='display:none'><p>Subscribe!</p></div></body>");
        assert_eq!(e.text(), "Q1? A1. Tab two. A3. Found.");
        // Text for screen readers only is not on the screen.
        let e = ex(
            "<body><p>Shared <span class='sr-only'>(opens in a new window)</span></p>\
            <a class='screen-reader-text skip-link' href=#main>Skip to content</a></body>",
        );
        assert_eq!(e.text(), "Shared");
        // A pop-up card inside its trigger shows on hover only; its links stay links.
        let e = ex(
            "<body><p>Gov. <span class='rollover-people'><a href=/p/noem>Kristi Noem</a>\
            <span class='rollover-people-block'><a href=/p/noem>Kristi Lynn Noem</a> \
            <a href=/s/1>Another story</a></span></span> (R) said so. \
            <span class='ToolTip'>Hover<span class='tooltiptext'>Tip text</span></span></p></body>",
        );
        assert_eq!(e.text(), "Gov. Kristi Noem (R) said so. Hover");
        assert!(e.links.iter().any(|l| l.href == "/s/1"));
    }

    #[test]
    fn metadata_and_headings() {
        let e = ex(
            "<head><meta name=description content=' d  1 '><meta name=keywords content='k'>\
            <meta name=ROBOTS content='noindex,nofollow'><link rel='Canonical' href='/c'><base href='http://b.test/x/'></head>\
            <body><h1>Big <i>one</i></h1><h2>Two</h2><h4>four</h4></body>",
        );
        assert_eq!(e.description.as_deref(), Some("d 1"));
        assert_eq!(e.keywords.as_deref(), Some("k"));
        assert!(e.robots.noindex && e.robots.nofollow);
        assert_eq!(e.canonical.as_deref(), Some("/c"));
        assert_eq!(e.base_href.as_deref(), Some("http://b.test/x/"));
        assert_eq!(
            e.headings,
            vec![(1, "Big one".to_string()), (2, "Two".to_string())]
        );
        assert!(e.sections.is_empty());
        // The headings a link can point at: an id of their own (mdBook), of an anchor
        // in them (DocBook), or the fragment of their permalink (Sphinx's headerlink).
        let e = ex(
            "<body><h1 id=top>Guide</h1><h2 id=' setup '>Set up</h2>            <h2><a id=USING></a>Using it</h2>            <section id=faq><h3>FAQ<a class=headerlink href='#faq'>¶</a></h3></section>            <div class=refsect2 id=SQL-CONC><h3>Concurrently</h3><p>Text.</p></div>            <div id=late><p>First text.</p><h3>Not its heading</h3></div>            <h3>No id</h3><h2 id=''>Empty id</h2></body>",
        );
        let got: Vec<(u8, &str, &str)> = e
            .sections
            .iter()
            .map(|(l, id, h)| (*l, id.as_str(), h.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "top", "Guide"),
                (2, "setup", "Set up"),
                (2, "USING", "Using it"),
                (3, "faq", "FAQ"),
                (3, "SQL-CONC", "Concurrently")
            ]
        );
    }

    #[test]
    fn links_with_anchors() {
        let e = ex(
            "<body><a href='/a' rel='NoFollow ugc'> one\n two </a><a href=b><img alt=' pic '></a>\
            <map><area href=c alt=Area></map><iframe src=f></iframe><a name=x>no href</a>\
            <meta http-equiv=refresh content='3; URL=\"/r\"'></body>",
        );
        let got: Vec<_> = e
            .links
            .iter()
            .map(|l| {
                (
                    l.tag,
                    l.href.as_str(),
                    l.text.as_str(),
                    l.alt.as_str(),
                    l.nofollow,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "/a", "one two", "", true),
                ("a", "b", "", "pic", false),
                ("area", "c", "", "Area", false),
                ("iframe", "f", "", "", false),
                ("meta", "/r", "", "", false),
            ]
        );
    }

    #[test]
    fn refresh_forms() {
        assert_eq!(refresh_url("0;url=http://x/").as_deref(), Some("http://x/"));
        assert_eq!(refresh_url("5, /y").as_deref(), Some("/y"));
        assert_eq!(refresh_url("5"), None);
    }

    #[test]
    fn blocks_know_their_elements() {
        let e = ex(
            "<body><div class=nav><a href=/>Home</a></div><article><p>Para one.</p><p>Two <a href=x>link</a></p></article></body>",
        );
        assert_eq!(e.blocks.len(), 3);
        assert_eq!(e.blocks[0].boiler_depth, 1);
        assert_eq!(e.blocks[0].link_chars, 4);
        assert_eq!(e.blocks[2].link_chars, 4);
        let art = e.elems.iter().position(|x| x.tag == "article").unwrap();
        assert_eq!((e.elems[art].start, e.elems[art].end), (1, 3));
    }
}
