//! Main-content extraction: a readability-like scoring of block-level elements
//! by the text density and link density of the blocks they contain.
//!
//! 1. Every text block (a run of visible text between block-level boundaries)
//!    of at least 25 chars and link density below 0.5 earns
//!    `1 + commas + min(chars / 100, 3)` points; its enclosing block element
//!    gets them in full, the parent half, the grandparent a third.
//! 2. An element's final score is `(points + tag bonus + class/id weight) *
//!    (1 - link density)`, where the tag bonus follows readability (div +5,
//!    pre/td/blockquote +3, lists/forms -3, headings/th -5) and the class/id
//!    weight is +25 for content-like names and -25 for boilerplate-like names.
//! 3. The best element is the main candidate; siblings (same parent) scoring at
//!    least `max(10, 0.2 * best)` join it, as in readability.
//! 4. The main text is every block inside the chosen elements, except blocks with
//!    link density above 0.5 and blocks inside a boilerplate-looking element
//!    (nav/footer/aside/header/form or negative class/id) below the candidate that
//!    holds less than half of the candidate's text.
//!
//! 5. A first line that repeats the page's `<title>` (the heading; "Headline | Site"
//!    counts) is dropped: the title is a field of its own.
//!
//! Blocks are joined by newlines. Pages with no candidate get `None`.

use super::html::Extract;

fn tag_bonus(tag: &str) -> f64 {
    match tag {
        "div" | "article" | "main" | "section" => 5.0,
        "pre" | "td" | "blockquote" => 3.0,
        "address" | "ol" | "ul" | "dl" | "dd" | "dt" | "li" | "form" => -3.0,
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "th" => -5.0,
        _ => 0.0,
    }
}

/// Prefix sums of (non-whitespace) chars and link chars over the blocks, for the link
/// density of any range of blocks.
struct Density {
    chars: Vec<usize>,
    links: Vec<usize>,
    /// Chars of each block.
    block_chars: Vec<usize>,
}

impl Density {
    fn new(ex: &Extract) -> Self {
        let mut chars = Vec::with_capacity(ex.blocks.len() + 1);
        let mut links = Vec::with_capacity(ex.blocks.len() + 1);
        chars.push(0usize);
        links.push(0usize);
        let mut block_chars = Vec::with_capacity(ex.blocks.len());
        for b in &ex.blocks {
            let c = b.text.chars().filter(|c| !c.is_whitespace()).count();
            block_chars.push(c);
            chars.push(chars.last().copied().unwrap_or(0) + c);
            links.push(links.last().copied().unwrap_or(0) + b.link_chars);
        }
        Density {
            chars,
            links,
            block_chars,
        }
    }

    /// Link density of blocks `start..end` (1 when they hold no chars).
    fn of(&self, start: usize, end: usize) -> f64 {
        let c = self.chars[end] - self.chars[start];
        if c == 0 {
            1.0
        } else {
            (self.links[end] - self.links[start]) as f64 / c as f64
        }
    }
}

/// Extracts the main text of a walked page, or `None` when nothing qualifies.
pub fn main_text(ex: &Extract) -> Option<String> {
    let n = ex.elems.len();
    if n == 0 || ex.blocks.is_empty() {
        return None;
    }
    let d = Density::new(ex);
    let (points, scored) = block_points(ex, &d);
    let mut best: Option<(usize, f64)> = None;
    let mut finals = vec![f64::MIN; n];
    for (i, el) in ex.elems.iter().enumerate() {
        if !scored[i] || el.tag == "body" || el.tag == "html" {
            continue;
        }
        let s = (points[i] + tag_bonus(el.tag) + el.class_weight as f64)
            * (1.0 - d.of(el.start, el.end));
        finals[i] = s;
        if best.is_none_or(|(_, b)| s > b) {
            best = Some((i, s));
        }
    }
    let Some((top, _)) = best else {
        return fallback(ex);
    };
    let top = climb(ex, &finals, &scored, top);
    let chosen = with_siblings(ex, &d, &finals, &scored, top);
    let out = blocks_text(ex, &d, chosen);
    let out = without_title(out, ex.title.as_deref());
    if out.is_empty() {
        return fallback(ex);
    }
    Some(out)
}

/// Step 1: the points each element earns from the text blocks under it, and whether
/// it earned any.
fn block_points(ex: &Extract, d: &Density) -> (Vec<f64>, Vec<bool>) {
    let n = ex.elems.len();
    let mut points = vec![0.0f64; n];
    let mut scored = vec![false; n];
    for (i, b) in ex.blocks.iter().enumerate() {
        let c = d.block_chars[i];
        if c < 25 || d.of(i, i + 1) > 0.5 {
            continue;
        }
        let commas = b
            .text
            .chars()
            .filter(|&ch| ch == ',' || ch == '，' || ch == '、')
            .count();
        let p = 1.0 + commas as f64 + (c as f64 / 100.0).min(3.0);
        // The block's own element is the "paragraph"; its ancestors are scored.
        let mut e = b.elem.and_then(|x| ex.elems[x].parent);
        for level in 0..5 {
            let Some(idx) = e else { break };
            let div = match level {
                0 => 1.0,
                1 => 2.0,
                l => l as f64 * 3.0,
            };
            points[idx] += p / div;
            scored[idx] = true;
            e = ex.elems[idx].parent;
        }
    }
    (points, scored)
}

/// Readability: from the best element `top`, climbs while an ancestor scores higher,
/// or holds nothing else.
fn climb(ex: &Extract, finals: &[f64], scored: &[bool], mut top: usize) -> usize {
    let threshold = finals[top] / 3.0;
    let mut last = finals[top];
    let mut parent = ex.elems[top].parent;
    while let Some(p) = parent {
        let el = &ex.elems[p];
        if el.tag == "body" || el.tag == "html" {
            break;
        }
        if scored[p] {
            if finals[p] < threshold {
                break;
            }
            if finals[p] > last {
                top = p;
                break;
            }
            last = finals[p];
        }
        parent = el.parent;
    }
    while let Some(p) = ex.elems[top].parent {
        let el = &ex.elems[p];
        if el.tag == "body"
            || el.tag == "html"
            || el.start != ex.elems[top].start
            || el.end != ex.elems[top].end
        {
            break;
        }
        top = p;
    }
    top
}

/// Step 3: `top` and its siblings that score at least `max(10, 0.2 * top's score)`
/// (or unscored paragraphs that look like content), in document order.
fn with_siblings(
    ex: &Extract,
    d: &Density,
    finals: &[f64],
    scored: &[bool],
    top: usize,
) -> Vec<usize> {
    let sib_threshold = (finals[top] * 0.2).max(10.0);
    let top_el = &ex.elems[top];
    let mut chosen: Vec<usize> = vec![top];
    for (i, el) in ex.elems.iter().enumerate() {
        if i == top || el.parent != top_el.parent || el.parent.is_none() {
            continue;
        }
        let ok = if scored[i] {
            finals[i] >= sib_threshold
        } else if el.tag == "p" && el.end > el.start {
            let len = d.chars[el.end] - d.chars[el.start];
            let ld = d.of(el.start, el.end);
            let last_text = ex.blocks[el.end - 1].text.trim_end();
            (len > 80 && ld < 0.25) || (ld == 0.0 && last_text.ends_with('.'))
        } else {
            false
        };
        if ok {
            chosen.push(i);
        }
    }
    chosen.sort_by_key(|&i| ex.elems[i].start);
    chosen
}

/// Step 4: the blocks of the `chosen` elements, one per line, except link-heavy
/// blocks and blocks inside a boilerplate-looking box of the element (see
/// [`boxed_in`]).
fn blocks_text(ex: &Extract, d: &Density, chosen: Vec<usize>) -> String {
    let mut out = String::new();
    for i in chosen {
        let el = &ex.elems[i];
        let total = d.chars[el.end] - d.chars[el.start];
        for (j, b) in ex.blocks[el.start..el.end].iter().enumerate() {
            let c = b.text.chars().count().max(1);
            if b.link_chars as f64 / c as f64 > 0.5 {
                continue;
            }
            if b.boiler_depth > el.boiler_depth && boxed_in(ex, d, el.start + j, i, total) {
                continue;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&b.text);
        }
    }
    out
}

/// `text` without its first line when that line repeats the page's `<title>` (the
/// article's heading: the title is a field of its own, not the start of the body). A
/// heading that is the title, or is in it ("Headline | Site"), or holds it, counts.
fn without_title(text: String, title: Option<&str>) -> String {
    let Some(title) = title else {
        return text;
    };
    let norm = |s: &str| -> String {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let (f, t) = (norm(first), norm(title));
    let repeats = f.split(' ').count() >= 3 && !t.is_empty() && (t.contains(&f) || f.contains(&t));
    if repeats && !rest.trim().is_empty() {
        rest.to_string()
    } else {
        text
    }
}

/// Whether block `block` sits in a boilerplate-looking element (class/id or tag)
/// below the candidate `top` that holds less than half of `top`'s `total` chars: a
/// share bar or a related box inside the article. A boilerplate-looking element that
/// holds most of the text wraps the content itself (page builders call every box a
/// "widget").
fn boxed_in(ex: &Extract, d: &Density, block: usize, top: usize, total: usize) -> bool {
    let mut e = ex.blocks[block].elem;
    while let Some(x) = e {
        if x == top {
            break;
        }
        let el = &ex.elems[x];
        if el.is_boiler() && 2 * (d.chars[el.end] - d.chars[el.start]) < total {
            return true;
        }
        e = el.parent;
    }
    false
}

/// For pages with no scorable paragraph (short pages): the blocks outside
/// boilerplate with at most half their text in links, else every block.
fn fallback(ex: &Extract) -> Option<String> {
    let keep = |strict: bool| -> String {
        let mut out = String::new();
        for b in &ex.blocks {
            let c = b.text.chars().count().max(1);
            if strict && (b.boiler_depth > 0 || b.link_chars as f64 / c as f64 > 0.5) {
                continue;
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&b.text);
        }
        out
    };
    let s = keep(true);
    let s = if s.is_empty() { keep(false) } else { s };
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::html::walk;

    #[test]
    fn picks_the_article_over_navigation() {
        let para = "This is a long paragraph of article text, with commas, clauses, and enough words to count as content.";
        let html = format!(
            "<body><nav><ul><li><a href=/>Home</a></li><li><a href=/a>About us and more</a></li></ul></nav>\
             <div class=sidebar><p>Sidebar text that is long enough to be a block, with a comma.</p></div>\
             <div class=post><h1>Title</h1><p>{para}</p><p>{para}</p><p>{para} <a href=/x>a link</a></p></div>\
             <footer><p>Copyright footer text that is long enough, sadly, to be a block.</p></footer></body>"
        );
        let ex = walk(&scraper::Html::parse_document(&html), "trawl");
        let m = main_text(&ex).unwrap();
        assert!(m.contains("Title"), "{m}");
        assert_eq!(m.matches("This is a long paragraph").count(), 3, "{m}");
        assert!(
            !m.contains("Sidebar") && !m.contains("Copyright") && !m.contains("About us"),
            "{m}"
        );
    }

    /// Page builders (Elementor, ...) call every box a widget: the article's own
    /// wrapper looks like boilerplate, yet holds the article; a share box inside the
    /// article still goes.
    #[test]
    fn boilerplate_named_wrappers_of_the_article_keep_it() {
        let para =
            "A paragraph of the press release, with commas, names, and enough words to be content.";
        let html = format!(
            "<body><div class='elementor-widget-wrap'><div class='elementor-widget elementor-widget-theme-post-content'>\
             <div class='elementor-widget-container'><p>{para}</p><p>{para}</p><p>{para}</p>\
             <div class='share-box'><p>Share this article with your friends, colleagues, and family now.</p></div>\
             </div></div></div><div><a href=/top>Scroll to top</a></div></body>"
        );
        let ex = walk(&scraper::Html::parse_document(&html), "trawl");
        let m = main_text(&ex).unwrap();
        assert_eq!(
            m.matches("A paragraph of the press release").count(),
            3,
            "{m}"
        );
        assert!(!m.contains("Share this") && !m.contains("Scroll"), "{m}");
    }

    #[test]
    fn the_title_is_not_repeated_at_the_top() {
        let t = "Rivers Rise After the Storm\nThe water came up overnight.".to_string();
        for title in [
            "Rivers Rise After the Storm",
            "Rivers rise after the storm | Valley News",
        ] {
            assert_eq!(
                without_title(t.clone(), Some(title)),
                "The water came up overnight."
            );
        }
        // Another first line, a short one, or nothing after it: kept.
        assert_eq!(without_title(t.clone(), Some("Valley News")), t);
        let short = "Storm\nThe water came up.".to_string();
        assert_eq!(without_title(short.clone(), Some("Storm")), short);
        let alone = "Rivers Rise After the Storm".to_string();
        assert_eq!(
            without_title(alone.clone(), Some("Rivers Rise After the Storm")),
            alone
        );
    }

    #[test]
    fn short_pages_fall_back_to_their_text() {
        let ex = walk(
            &scraper::Html::parse_document("<body><a href=/>x</a></body>"),
            "trawl",
        );
        assert_eq!(main_text(&ex).as_deref(), Some("x"));
        let ex = walk(&scraper::Html::parse_document("<body> </body>"), "trawl");
        assert_eq!(main_text(&ex), None);
    }
}
