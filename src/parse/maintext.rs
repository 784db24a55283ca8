//! Main-content extraction: a readability-like scoring of block-level elements
//! by the text density and link density of the blocks they contain, widened to the
//! region that holds the page's prose.
//!
//! 1. Every text block (a run of visible text between block-level boundaries)
//!    of at least 25 chars and link density below 0.5 earns
//!    `1 + commas (at most 10) + min(chars / 100, 3)` points; its enclosing block
//!    element gets them in full, the parent half, the grandparent a third.
//! 2. An element's final score is `(points + tag bonus + class/id weight) *
//!    (1 - link density)`, where the tag bonus follows readability (div +5,
//!    pre/td/blockquote +3, lists/forms -3, headings/th -5) and the class/id
//!    weight is +25 for content-like names and -25 for boilerplate-like names.
//! 3. The best element is the main candidate; an element inside a `footer`, `aside`
//!    or `nav`, or inside a box named like boilerplate and not like content
//!    (readability's "unlikely candidates": comments, a sidebar), is it only when it
//!    scores 4 times the best outside such boxes. When three others of the five best
//!    score three quarters of its score, the candidate is their lowest common
//!    ancestor with it (readability's "alternative candidates"); then it climbs as in
//!    readability. When it holds under 35% of the page's prose region (the smallest
//!    element with 80% of the chars of the page's prose paragraphs), or under two
//!    thirds of it while another element there scores 0.6 of the best (0.5 with
//!    almost no links) with a third of its text (the article's second box), the
//!    article is spread over more boxes than the scores reach, and the region is the
//!    candidate. Siblings (same parent) scoring at least `max(10, 0.2 * best)` join
//!    it, as in readability, and so do linkless paragraphs and lede boxes next to it.
//! 4. The main text is every block inside the chosen elements, except blocks with
//!    link density above 0.5, blocks inside a boilerplate-looking element (tag, or
//!    class/id: [`super::html::ElemInfo::boiler`]) below the candidate that holds
//!    less than half of the candidate's text and is not an ancestor of the best
//!    element (an element named only weakly so, `widget` or `nav`, that holds a
//!    paragraph of prose and few links is the article's), blocks of an element that
//!    repeats an earlier one block for block (a page's variants for phone, tablet
//!    and desktop), and the lines [`super::boilerplate`] recognizes by their words:
//!    labels and datelines anywhere, bylines at the top, an author's presentation
//!    in the second half and what follows it (and a heading "About <name>" among the
//!    last lines), and at the end promotional lines, taking turns with short lines
//!    and lists of links to other stories after the last sentence.
//!    Quotations stay.
//! 5. The headline (the page's `h1` or a line that repeats its `<title>`;
//!    "Headline | Site" counts) among the first eight lines is dropped with the lines
//!    above it (a kicker, a banner) unless one of them is a paragraph: the title is a
//!    field of its own.
//! 6. A page whose main text holds no paragraph of prose (60 non-space chars, under a
//!    quarter in links) is not an article (a home page, a listing, a form): `None`,
//!    unless all its plain text is short (a one-line page keeps it).
//!
//! Blocks are joined by newlines. Pages with no candidate get their plain text under
//! the same rule 6; pages with no text get `None`.

use super::boilerplate;
use super::html::{Block, Extract};

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
    let fenced = fenced(ex);
    let mut best: Option<(usize, f64)> = None;
    let mut best_fenced: Option<(usize, f64)> = None;
    let mut finals = vec![f64::MIN; n];
    for (i, el) in ex.elems.iter().enumerate() {
        if !scored[i] || el.tag == "body" || el.tag == "html" {
            continue;
        }
        let s = (points[i] + tag_bonus(el.tag) + el.class_weight as f64)
            * (1.0 - d.of(el.start, el.end));
        finals[i] = s;
        let slot = if fenced[i] {
            &mut best_fenced
        } else {
            &mut best
        };
        if slot.is_none_or(|(_, b)| s > b) {
            *slot = Some((i, s));
        }
    }
    let best = match (best, best_fenced) {
        (Some(open), Some(boxed)) if FENCED_LEAD * open.1 < boxed.1 => Some(boxed),
        (open, boxed) => open.or(boxed),
    };
    let Some((top, _)) = best else {
        return fallback(ex);
    };
    let core = top;
    let top = common_ancestor(ex, &finals, top);
    let top = climb(ex, &finals, &scored, top);
    let holds = article_chain(ex, core);
    let top = prose_region(ex, &d, &finals, &holds, top, core);
    let chosen = with_siblings(ex, &d, &finals, &scored, top, core);
    let kept = blocks_text(ex, &d, chosen, &holds);
    if !kept.iter().any(|b| paragraph(b)) {
        // Not an article: a home page, a listing, a form.
        return short_text(ex);
    }
    let texts: Vec<&str> = kept.iter().map(|b| b.text.as_str()).collect();
    let out = texts.join("\n");
    if out.is_empty() {
        return fallback(ex);
    }
    Some(out)
}

/// At most this many commas count in a block: a list of names or tags in one
/// paragraph ("thanks to A, B, C, ...") is not the article.
const COMMA_CAP: f64 = 10.0;

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
        let p = 1.0 + (commas as f64).min(COMMA_CAP) + (c as f64 / 100.0).min(3.0);
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

/// A candidate fenced off in a box that is not the article's is the best only when
/// it scores this many times the best outside such boxes: comments longer than
/// the article lose to it, an article in a box named like a sidebar keeps its place.
const FENCED_LEAD: f64 = 4.0;

/// The elements inside a box that is a `footer`, `aside` or `nav`, or is named
/// like boilerplate by its class or id and not like content (`comments`,
/// `sidebar`; not `sidebar-content`), whatever its size: readability's "unlikely
/// candidates", which compete only when nothing else does (see [`FENCED_LEAD`]).
fn fenced(ex: &Extract) -> Vec<bool> {
    let mut fenced = vec![false; ex.elems.len()];
    for (i, el) in ex.elems.iter().enumerate() {
        // Elements come in document order: the parent's flag is set.
        fenced[i] = el.parent.is_some_and(|p| fenced[p])
            || matches!(el.tag, "footer" | "aside" | "nav")
            || (el.is_boiler() && !el.weak_boiler && el.class_weight < 0);
    }
    fenced
}

/// Readability: the best candidates. When at least three others of the five best score
/// three quarters of the best's score or more, the article is split among them (its
/// sections, a page builder's boxes): the candidate becomes the lowest ancestor of
/// the best that holds three of them.
fn common_ancestor(ex: &Extract, finals: &[f64], top: usize) -> usize {
    const TOP_CANDIDATES: usize = 5;
    const MIN_ALTERNATIVES: usize = 3;
    let mut best: Vec<(usize, f64)> = finals
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, s)| s > f64::MIN)
        .collect();
    best.sort_by(|a, b| b.1.total_cmp(&a.1));
    let alternatives: Vec<usize> = best
        .iter()
        .take(TOP_CANDIDATES)
        .filter(|&&(i, s)| i != top && s >= 0.75 * finals[top])
        .map(|&(i, _)| i)
        .collect();
    if alternatives.len() < MIN_ALTERNATIVES {
        return top;
    }
    let is_ancestor = |a: usize, mut e: usize| {
        while let Some(p) = ex.elems[e].parent {
            if p == a {
                return true;
            }
            e = p;
        }
        false
    };
    let mut parent = ex.elems[top].parent;
    while let Some(p) = parent {
        let el = &ex.elems[p];
        if el.tag == "body" || el.tag == "html" {
            break;
        }
        if alternatives.iter().filter(|&&c| is_ancestor(p, c)).count() >= MIN_ALTERNATIVES {
            return p;
        }
        parent = el.parent;
    }
    top
}

/// Share of the page's prose that the region holding it must hold.
const REGION_SHARE: f64 = 0.8;
/// The candidate holding under this share of the region's prose is a part of the
/// article, not all of it.
const TOP_SHARE: f64 = 0.35;

/// The page's prose region: the smallest element that holds [`REGION_SHARE`] of the
/// chars of the page's prose (paragraphs outside strongly boilerplate-named boxes and
/// `nav`, `footer`, `aside`, `header`, `form`, `menu`). When the candidate `top`
/// holds under half of that region's prose, the article is spread over more boxes
/// than the scores reach (sections of a few paragraphs each, deep in a page
/// builder's grid): the region is the candidate.
/// `holds` is [`article_chain`]: those elements hold the article whatever their
/// names.
fn prose_region(
    ex: &Extract,
    d: &Density,
    finals: &[f64],
    holds: &[bool],
    top: usize,
    core: usize,
) -> usize {
    let strong = |x: usize| {
        let e = &ex.elems[x];
        e.is_boiler() && !e.weak_boiler && !holds[x]
    };
    // Prefix sums of prose chars over the blocks.
    let mut prose = Vec::with_capacity(ex.blocks.len() + 1);
    prose.push(0usize);
    for (i, b) in ex.blocks.iter().enumerate() {
        let mut good = paragraph(b) && !comma_list(&b.text);
        let mut e = b.elem;
        while good && let Some(x) = e {
            good = !strong(x);
            e = ex.elems[x].parent;
        }
        prose.push(prose[i] + if good { d.block_chars[i] } else { 0 });
    }
    let total = prose[ex.blocks.len()];
    if total == 0 {
        return top;
    }
    let of = |x: usize| prose[ex.elems[x].end] - prose[ex.elems[x].start];
    let region = (0..ex.elems.len())
        .filter(|&x| of(x) as f64 >= REGION_SHARE * total as f64)
        .min_by_key(|&x| ex.elems[x].end - ex.elems[x].start);
    match region {
        Some(r)
            if ex.elems[r].tag != "body"
                && ex.elems[r].tag != "html"
                && ((of(top) as f64) < TOP_SHARE * of(r) as f64
                    || second_part(ex, d, finals, r, top, core) && 3 * of(top) < 2 * of(r))
                // A page whose prose is mostly not counted (the article in a box
                // named like navigation): the region would be a stray paragraph.
                && of(r) > d.chars[ex.elems[top].end] - d.chars[ex.elems[top].start] =>
        {
            r
        }
        _ => top,
    }
}

/// Whether region `r` holds, beside the candidate `top`, an element scoring at
/// least [`SECOND_PART`] of the best's score and a third of its text: the article's
/// other half.
fn second_part(
    ex: &Extract,
    d: &Density,
    finals: &[f64],
    r: usize,
    top: usize,
    core: usize,
) -> bool {
    let (rs, re) = (ex.elems[r].start, ex.elems[r].end);
    let (ts, te) = (ex.elems[top].start, ex.elems[top].end);
    let top_chars = d.chars[te] - d.chars[ts];
    ex.elems.iter().enumerate().any(|(x, el)| {
        el.start >= rs
            && el.end <= re
            && (el.end <= ts || el.start >= te)
            && finals[x] >= part_share(d, el) * finals[core]
            && 3 * (d.chars[el.end] - d.chars[el.start]) >= top_chars
            // Not a copy of the article (a page builder's variant for phones).
            && ex.blocks.get(el.start).map(|b| &b.text)
                != ex.blocks.get(ex.elems[core].start).map(|b| &b.text)
    })
}

/// See [`second_part`].
const SECOND_PART: f64 = 0.6;
/// [`SECOND_PART`] for a box nearly without links (under [`LINKLESS`] of its
/// chars): related stories and teasers link to their pages, a part of the article
/// need not.
const LINKLESS_PART: f64 = 0.5;
/// See [`LINKLESS_PART`].
const LINKLESS: f64 = 0.02;

/// The share of the best's score that makes `el` a part of the article
/// ([`SECOND_PART`] or [`LINKLESS_PART`]).
fn part_share(d: &Density, el: &super::html::ElemInfo) -> f64 {
    if d.of(el.start, el.end) < LINKLESS {
        LINKLESS_PART
    } else {
        SECOND_PART
    }
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
    core: usize,
) -> Vec<usize> {
    let sib_threshold = (finals[top] * 0.2).max(10.0);
    let top_el = &ex.elems[top];
    let mut chosen: Vec<usize> = vec![top];
    for (i, el) in ex.elems.iter().enumerate() {
        if i == top || el.parent != top_el.parent || el.parent.is_none() {
            continue;
        }
        // A box of the page builder's grid holding a part of the article as strong
        // as the second part of [`prose_region`]: its wrappers dilute its own score.
        let part = (el.weak_boiler || !el.is_boiler())
            && finals[core] > 0.0
            && part_inside(ex, d, finals, i, part_share(d, el) * finals[core]);
        let ok = if part {
            true
        } else if scored[i] {
            finals[i] >= sib_threshold && (el.weak_boiler || !el.is_boiler())
        } else if el.tag == "p" && el.end > el.start {
            let len = d.chars[el.end] - d.chars[el.start];
            let ld = d.of(el.start, el.end);
            let last_text = ex.blocks[el.end - 1].text.trim_end();
            (len > 80 && ld < 0.25) || (ld == 0.0 && last_text.ends_with('.'))
        } else if matches!(el.tag, "div" | "section" | "blockquote")
            && !el.is_boiler()
            && el.end > el.start
        {
            // A lede or summary in a box of its own: linkless prose, no boilerplate
            // inside (an image box's caption).
            let len = d.chars[el.end] - d.chars[el.start];
            len > 80
                && d.of(el.start, el.end) == 0.0
                && ex.blocks[el.start..el.end]
                    .iter()
                    .all(|b| b.boiler_depth == el.boiler_depth)
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

/// Whether an element inside `x` that does not look like boilerplate scores at
/// least `min` and holds most of `x`'s text: one part of the article (not a listing
/// of teasers, each scoring well on its own).
fn part_inside(ex: &Extract, d: &Density, finals: &[f64], x: usize, min: f64) -> bool {
    let (start, end) = (ex.elems[x].start, ex.elems[x].end);
    let chars = d.chars[end] - d.chars[start];
    ex.elems[x + 1..]
        .iter()
        .zip(&finals[x + 1..])
        // Elements come in document order: `x`'s descendants follow it.
        .take_while(|(e, _)| e.start < end)
        .any(|(e, &s)| {
            s >= min && !e.is_boiler() && 2 * (d.chars[e.end] - d.chars[e.start]) >= chars
        })
}

/// The best-scoring element `core` and its ancestors, marked by index: they hold the
/// article, whatever their names say (`<div class="box article modal-enabled">`).
fn article_chain(ex: &Extract, core: usize) -> Vec<bool> {
    let mut holds = vec![false; ex.elems.len()];
    let mut e = Some(core);
    while let Some(x) = e {
        holds[x] = true;
        e = ex.elems[x].parent;
    }
    holds
}

/// Step 4: the blocks of the `chosen` elements, one per line, except link-heavy
/// blocks and blocks inside a boilerplate-looking box of the element (see
/// [`boxed_in`]; `holds` is [`article_chain`]).
fn blocks_text<'a>(
    ex: &'a Extract,
    d: &Density,
    chosen: Vec<usize>,
    holds: &[bool],
) -> Vec<&'a Block> {
    let copies = copies(ex, d, &chosen);
    let mut kept: Vec<&Block> = Vec::new();
    for i in chosen {
        let el = &ex.elems[i];
        let total = d.chars[el.end] - d.chars[el.start];
        for (j, b) in ex.blocks[el.start..el.end].iter().enumerate() {
            if mostly_links(b) {
                continue;
            }
            if b.boiler_depth > el.boiler_depth && boxed_in(ex, d, el.start + j, i, total, holds) {
                continue;
            }
            if boilerplate::is_label(&b.text) || dateline(ex, b) {
                continue;
            }
            if copies[el.start + j] {
                continue;
            }
            kept.push(b);
        }
    }
    // An author's presentation in the second half ends the article.
    if let Some(bio) = kept
        .iter()
        .skip(kept.len() / 2)
        .position(|b| boilerplate::is_author_bio(&b.text))
    {
        kept.truncate(kept.len() / 2 + bio);
    }
    // So does the publisher's presentation closing a press release or a post: a
    // heading "About <name>" among the last [`ABOUT_TAIL`] lines.
    if kept.len() >= 2 * ABOUT_TAIL
        && let Some(about) = kept[kept.len() - ABOUT_TAIL..]
            .iter()
            .position(|b| boilerplate::is_about_heading(&b.text))
    {
        kept.truncate(kept.len() - ABOUT_TAIL + about);
    }
    // The headline opens the body: the page's own heading (`h1`) or a line that
    // repeats the `<title>`, among the first [`HEADLINE_LINES`]. It is a field of
    // its own (`title`, `metadata.h1`), and short lines above it (a kicker, a
    // banner, the "A+ A-" of a font-size control) are not the article.
    let headline = kept.iter().take(HEADLINE_LINES).position(|b| {
        b.elem.is_some_and(|e| ex.elems[e].tag == "h1")
            || repeats_title(&b.text, ex.title.as_deref())
    });
    if let Some(h) = headline
        && h + 1 < kept.len()
        && !kept[..h].iter().any(|b| paragraph(b))
    {
        kept.drain(..=h);
    }
    // A byline opens the article, promotional lines close it.
    let head = kept
        .iter()
        .take_while(|b| boilerplate::is_byline(&b.text))
        .count();
    let mut end = kept.len();
    // Until neither rule cuts more: a "Donate" line after the newsletter call, the
    // call after a "While you are here…".
    loop {
        let before = end;
        end -= kept[head..end]
            .iter()
            .rev()
            .take_while(|b| boilerplate::is_promo(&b.text))
            .count();
        // Short lines after the last sentence of prose, outside lists and tables:
        // tags, names, "Related Roundup", widget titles; and a list of links to
        // other stories there, each item a headline with a link in it ("More Great
        // Stories").
        if let Some(last) = kept[head..end].iter().rposition(|b| prose(&b.text)) {
            let last = head + last;
            let tail = &kept[last + 1..end];
            let linked_items = tail
                .iter()
                .filter(|b| in_list(ex, b) && b.link_chars > 0)
                .count();
            if tail.iter().all(|b| {
                let words = words(&b.text);
                if in_list(ex, b) {
                    linked_items >= 3 && b.link_chars > 0 && words < 25
                } else {
                    words < 8
                }
            }) {
                end = last + 1;
            }
        }
        if end == before {
            break;
        }
    }
    kept.truncate(end);
    kept.drain(..head);
    kept
}

/// See the publisher's presentation in [`blocks_text`].
const ABOUT_TAIL: usize = 4;

/// The headline is looked for among this many first lines of the main text.
const HEADLINE_LINES: usize = 8;

/// Blocks of an element that repeats an earlier element word for word, block for
/// block (at least two blocks and [`SHORT_PAGE_CHARS`] chars): a page that carries
/// its article twice or thrice (a page builder's variants for phone, tablet and
/// desktop, each hidden by a style sheet) gives it once. A paragraph repeated on its
/// own (a pull quote) stays.
fn copies(ex: &Extract, d: &Density, chosen: &[usize]) -> Vec<bool> {
    use std::hash::{Hash, Hasher};
    let mut out = vec![false; ex.blocks.len()];
    let mut seen: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let ranges: Vec<(usize, usize)> = chosen
        .iter()
        .map(|&c| (ex.elems[c].start, ex.elems[c].end))
        .collect();
    for (i, el) in ex.elems.iter().enumerate() {
        if el.end < el.start + 2
            || d.chars[el.end] - d.chars[el.start] < SHORT_PAGE_CHARS
            || !ranges.iter().any(|&(s, e)| s <= el.start && el.end <= e)
        {
            continue;
        }
        let mut h = rustc_hash::FxHasher::default();
        for b in &ex.blocks[el.start..el.end] {
            b.text.hash(&mut h);
        }
        match seen.entry(h.finish()) {
            std::collections::hash_map::Entry::Occupied(first) => {
                let f = &ex.elems[*first.get()];
                let same = f.end - f.start == el.end - el.start
                    && ex.blocks[f.start..f.end]
                        .iter()
                        .zip(&ex.blocks[el.start..el.end])
                        .all(|(a, b)| a.text == b.text);
                if same && el.start >= f.end {
                    out[el.start..el.end].iter_mut().for_each(|x| *x = true);
                }
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(i);
            }
        }
    }
    out
}

/// Chars outside links that make a link-heavy block a sentence of the article.
const UNLINKED_SENTENCE: usize = 80;

/// Whether block `b` is over half links and not a sentence of prose besides: a
/// sentence that cites its sources or links a list of places ("in my lists of the
/// best hotels in Oman, the best spas, ...") keeps its place; a line of links does
/// not.
fn mostly_links(b: &Block) -> bool {
    let c = b.text.chars().count().max(1);
    2 * b.link_chars > c && (c - b.link_chars.min(c) < UNLINKED_SENTENCE || !prose(&b.text))
}

/// Non-space chars of a block that is a paragraph of prose (about a sentence).
const PARAGRAPH_CHARS: usize = 60;

/// Whether block `b` is a paragraph: [`PARAGRAPH_CHARS`] non-space chars or more,
/// under a quarter of them in links. A page whose main text holds none is not an
/// article.
fn paragraph(b: &Block) -> bool {
    let chars = b.text.chars().filter(|c| !c.is_whitespace()).count();
    chars >= PARAGRAPH_CHARS && 4 * b.link_chars < chars
}

/// Whether `text` is a list written out with commas (names, tags, places: a comma
/// for every four words or fewer, ten commas or more), not prose.
fn comma_list(text: &str) -> bool {
    let commas = text
        .chars()
        .filter(|&c| c == ',' || c == '，' || c == '、')
        .count();
    commas >= 10 && 4 * commas >= text.split_whitespace().count()
}

/// Words in `text`: separated by spaces, or two Chinese or Japanese characters to a
/// word (those scripts write no spaces).
fn words(text: &str) -> usize {
    let cjk = text
        .chars()
        .filter(|&c| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}'))
        .count();
    text.split_whitespace().count() + cjk / 2
}

/// Whether `text` reads as prose: ten words or more ending a sentence.
fn prose(text: &str) -> bool {
    words(text) >= 10
        && text
            .trim_end()
            .ends_with(['.', '!', '?', '"', '”', '»', ')', '。', '！', '？'])
}

/// Whether block `b` is a list item or a table cell.
fn in_list(ex: &Extract, b: &Block) -> bool {
    b.elem
        .is_some_and(|e| matches!(ex.elems[e].tag, "li" | "td" | "th" | "dt" | "dd"))
}

/// Whether block `b` is a dateline ([`boilerplate::is_dateline`]) outside headings,
/// lists and tables (where dates are content: a timeline, a schedule) and quotes (an
/// embedded post's date line is part of the quote).
fn dateline(ex: &Extract, b: &Block) -> bool {
    let tag = b.elem.map_or("", |e| ex.elems[e].tag);
    if matches!(
        tag,
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "li" | "td" | "th" | "dt" | "dd" | "pre"
    ) || !boilerplate::is_dateline(&b.text)
    {
        return false;
    }
    let mut e = b.elem;
    while let Some(x) = e {
        if ex.elems[x].tag == "blockquote" {
            return false;
        }
        e = ex.elems[x].parent;
    }
    true
}

/// Whether `line` repeats the page's `<title>` (the article's heading: the title is a
/// field of its own, not the start of the body): a line of three words or more that
/// is the title, or is in it ("Headline | Site"), or holds it.
fn repeats_title(line: &str, title: Option<&str>) -> bool {
    let Some(title) = title else {
        return false;
    };
    let norm = |s: &str| -> String {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (f, t) = (norm(line), norm(title));
    f.split(' ').count() >= 3 && !t.is_empty() && (t.contains(&f) || f.contains(&t))
}

/// Whether block `block` sits in a boilerplate-looking element (class/id or tag)
/// below the candidate `top` that holds less than half of `top`'s `total` chars: a
/// share bar or a related box inside the article. A boilerplate-looking element that
/// holds most of the text wraps the content itself (page builders call every box a
/// "widget"). A block in a quotation is never boxed in.
fn boxed_in(
    ex: &Extract,
    d: &Density,
    block: usize,
    top: usize,
    total: usize,
    holds: &[bool],
) -> bool {
    let mut e = ex.blocks[block].elem;
    while let Some(x) = e {
        if x == top {
            break;
        }
        let el = &ex.elems[x];
        if el.tag == "blockquote" {
            // A quotation (an embedded post in its "social embed" box) is the
            // article's text: share bars and related boxes quote nothing.
            return false;
        }
        if el.is_boiler()
            && !holds[x]
            && 2 * (d.chars[el.end] - d.chars[el.start]) < total
            && !(el.weak_boiler && prose_box(ex, d, x))
        {
            return true;
        }
        e = el.parent;
    }
    false
}

/// Whether element `x` reads as a box of the article's prose: a [`paragraph`] in it and
/// under a quarter of its chars in links. A weakly boilerplate-named box
/// (`elementor-widget-text-editor`) that does is the article's.
fn prose_box(ex: &Extract, d: &Density, x: usize) -> bool {
    let el = &ex.elems[x];
    d.of(el.start, el.end) < 0.25 && ex.blocks[el.start..el.end].iter().any(paragraph)
}

/// Text of at most this many non-space chars is a short page's main text.
const SHORT_PAGE_CHARS: usize = 200;

/// The blocks outside boilerplate with at most half their text in links, else every
/// block: the text of a page without a candidate.
fn plain_blocks(ex: &Extract) -> Vec<&Block> {
    let strict: Vec<&Block> = ex
        .blocks
        .iter()
        .filter(|b| {
            let c = b.text.chars().count().max(1);
            b.boiler_depth == 0 && b.link_chars as f64 / c as f64 <= 0.5
        })
        .collect();
    if strict.is_empty() {
        ex.blocks.iter().collect()
    } else {
        strict
    }
}

/// The blocks' texts, a line each (`None` when empty).
fn join(blocks: &[&Block]) -> Option<String> {
    let texts: Vec<&str> = blocks.iter().map(|b| b.text.as_str()).collect();
    let s = texts.join("\n");
    (!s.is_empty()).then_some(s)
}

/// The main text of a page that is not an article: its [`plain_blocks`] when they
/// are short (a one-line page), else nothing.
fn short_text(ex: &Extract) -> Option<String> {
    let blocks = plain_blocks(ex);
    let chars: usize = blocks
        .iter()
        .map(|b| b.text.chars().filter(|c| !c.is_whitespace()).count())
        .sum();
    if chars <= SHORT_PAGE_CHARS {
        join(&blocks)
    } else {
        None
    }
}

/// For pages with no candidate (text straight in `<body>`, short pages): the
/// [`plain_blocks`] when one is a paragraph, else the [`short_text`].
fn fallback(ex: &Extract) -> Option<String> {
    let blocks = plain_blocks(ex);
    if blocks.iter().any(|b| paragraph(b)) {
        join(&blocks)
    } else {
        short_text(ex)
    }
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
             <div class=post><h2>Heading</h2><p>{para}</p><p>{para}</p><p>{para} <a href=/x>a link</a></p></div>\
             <footer><p>Copyright footer text that is long enough, sadly, to be a block.</p></footer></body>"
        );
        let ex = walk(&scraper::Html::parse_document(&html), "trawl");
        let m = main_text(&ex).unwrap();
        assert!(m.starts_with("Heading\n"), "{m}");
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
        let line = "Rivers Rise After the Storm";
        for title in [
            "Rivers Rise After the Storm",
            "Rivers rise after the storm | Valley News",
        ] {
            assert!(repeats_title(line, Some(title)), "{title}");
        }
        // Another line, or a short one: not the title.
        assert!(!repeats_title(line, Some("Valley News")));
        assert!(!repeats_title("Storm", Some("Storm")));
        assert!(!repeats_title(line, None));
        // Through the extraction: the headline (the title, or the page's h1) goes,
        // and the byline under it; a page of one line keeps it.
        for (title, h) in [("Rivers Rise After the Storm", "h2"), ("Valley News", "h1")] {
            let html = format!(
                "<head><title>{title}</title></head><body><article><{h}>Rivers Rise After the Storm</{h}>\
                 <p>By Jane Doe</p><p>{PARA}</p><p>{PARA}</p></article></body>"
            );
            assert_eq!(
                main_of(&html).unwrap(),
                format!("{PARA}\n{PARA}"),
                "{title}"
            );
        }
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

    fn main_of(html: &str) -> Option<String> {
        main_text(&walk(&scraper::Html::parse_document(html), "trawl"))
    }

    const PARA: &str = "A paragraph of the story itself, with commas, names, places, and enough words to be content.";

    /// Home pages, listings and forms are not articles: no main text, however much
    /// navigation they have.
    #[test]
    fn non_articles_get_no_main_text() {
        let mut nav = String::from("<nav><ul>");
        for i in 0..30 {
            nav.push_str(&format!("<li><a href=/s{i}>Section number {i}</a></li>"));
        }
        nav.push_str("</ul></nav>");
        let mut teasers = String::from("<div class=stories>");
        for i in 0..12 {
            teasers.push_str(&format!(
                "<div class=teaser><h2><a href=/story/{i}>Headline of story number {i} on the river</a></h2>\
                 <p>Storms, floods and repairs: story {i}.</p><a href=/c/{i}>Weather</a></div>"
            ));
        }
        teasers.push_str("</div>");
        assert_eq!(main_of(&format!("<body>{nav}{teasers}</body>")), None);
        let form = format!(
            "<body>{nav}<form><label>User name</label><input name=u><label>Password</label>\
             <input type=password name=p><p>Forgot your password? Ask the desk.</p></form></body>"
        );
        assert_eq!(main_of(&form), None);
        // The same navigation around an article: the article.
        let article =
            format!("<body>{nav}<div class=story><p>{PARA}</p><p>{PARA}</p></div></body>");
        assert_eq!(main_of(&article).unwrap(), format!("{PARA}\n{PARA}"));
        // A one-line page keeps its line.
        assert_eq!(
            main_of("<body><div><div>Lorem ipsum dolor sit amet.</div></div></body>").as_deref(),
            Some("Lorem ipsum dolor sit amet.")
        );
    }

    /// Captions, credits, datelines, bylines, widget labels and promotional tails
    /// go; an embedded post quoted in a "social" box and a lede in a box of its own
    /// stay; an article wrapper named like a modal keeps its article.
    #[test]
    fn boilerplate_inside_the_article() {
        let html = format!(
            "<body><div class='box article modal-enabled'><div class=entry-content-read-more>\
             <p class=byline>By Jane Doe</p><p class=meta-line>Updated 1:39 am EST, November 20, 2019</p>\
             <div class=summary>The lede of the story, in a box of its own, says what happened today.</div>\
             <p>{PARA}</p><figure><img src=a.jpg><figcaption>The river at dawn, seen from the bridge (Photo: Jane Doe)</figcaption></figure>\
             <p>{PARA}</p><div><span class=img-credit>Reuters / John Roe</span></div>\
             <p class='dpsp-share-text'>Sharing is caring!</p><div>Advertisement</div>\
             <div class=social-media-embed><blockquote class=twitter-tweet><p>The water is up to the second step of the town hall this morning.</p>\
             — River Watch (@riverwatch) November 18, 2019</blockquote></div>\
             <p>{PARA}</p><p>Get the latest updates in your inbox. Subscribe to our newsletters.</p>\
             </div></div></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.starts_with("The lede of the story"), "{m}");
        assert_eq!(m.matches("A paragraph of the story").count(), 3, "{m}");
        assert!(m.contains("second step of the town hall"), "{m}");
        assert!(m.contains("(@riverwatch) November 18, 2019"), "{m}");
        for gone in [
            "Jane Doe",
            "Updated",
            "river at dawn",
            "Reuters",
            "Sharing",
            "Advertisement",
            "Subscribe",
        ] {
            assert!(!m.contains(gone), "{gone} in {m}");
        }
    }

    /// Sections of `depth` nested page-builder boxes, each with a heading and
    /// `paras[i]` paragraphs of its own.
    fn sections(paras: &[usize], depth: usize, class: &str) -> String {
        let mut out = String::new();
        for (i, &n) in paras.iter().enumerate() {
            out.push_str("<section>");
            for _ in 0..depth {
                out.push_str(&format!("<div class='{class}'>"));
            }
            out.push_str(&format!("<h2>Part {i} of the story</h2>"));
            for j in 0..n {
                out.push_str(&format!("<p>{PARA} Part {i}, line {j}.</p>"));
            }
            for _ in 0..depth {
                out.push_str("</div>");
            }
            out.push_str("</section>");
        }
        out
    }

    /// An article cut into sections, shallow or deep in a grid, is given whole
    /// (also when one section is longer than the others, so that it alone scores
    /// best); the related box after it is not.
    #[test]
    fn an_article_split_into_sections_is_given_whole() {
        let related = "<div class=related><h3>Read next</h3><p>Another story, with commas, names, and places in it, for the reader.</p></div>";
        for paras in [[2, 2, 2, 2, 2, 2], [4, 2, 2, 2, 2, 2]] {
            for depth in [1, 3, 7] {
                let html = format!(
                    "<body><nav><a href=/>Home</a></nav><main><article>{}{related}</article></main></body>",
                    sections(&paras, depth, "row")
                );
                let m = main_of(&html).unwrap();
                for i in 0..6 {
                    assert!(
                        m.contains(&format!("Part {i}, line 1.")),
                        "depth {depth}, part {i}: {m}"
                    );
                    assert!(m.contains(&format!("Part {i} of the story")), "{m}");
                }
                assert!(!m.contains("Another story"), "depth {depth}: {m}");
            }
        }
    }

    /// Page builders name every box a widget (`elementor-widget-text-editor`), a
    /// section wrapper may be named like navigation: prose inside overrules such
    /// names, not a share or related box's.
    #[test]
    fn weak_boilerplate_names_yield_to_prose() {
        let html = format!(
            "<body><div class=content-nav-section>{}             <div class='share-box'><p>Share this article with your friends, colleagues, and family now please.</p></div>             </div><div class='menu'><ul><li><a href=/a>About</a></li><li><a href=/b>Blog</a></li></ul></div></body>",
            sections(
                &[2, 2, 2, 2],
                4,
                "elementor-widget elementor-widget-text-editor"
            )
        );
        let m = main_of(&html).unwrap();
        for i in 0..4 {
            assert!(m.contains(&format!("Part {i}, line 1.")), "part {i}: {m}");
        }
        assert!(!m.contains("Share this") && !m.contains("About"), "{m}");
    }

    /// A page that carries its article thrice (variants for phone, tablet and
    /// desktop) gives it once; a paragraph repeated on its own stays.
    #[test]
    fn variants_of_the_article_are_given_once() {
        let body =
            format!("<h2>The heading</h2><p>{PARA}</p><p>{PARA} Two.</p><p>{PARA} Three.</p>");
        let html = format!(
            "<body><main><div class='ssr-variant hidden-a'>{body}</div><div class='ssr-variant hidden-b'>{body}</div>             <div class='ssr-variant hidden-c'>{body}</div></main></body>"
        );
        let m = main_of(&html).unwrap();
        assert_eq!(m.matches("Three.").count(), 1, "{m}");
        assert_eq!(m.matches("The heading").count(), 1, "{m}");
        let quoted =
            format!("<body><article><p>{PARA}</p><p>{PARA}</p><p>{PARA} End.</p></article></body>");
        assert_eq!(main_of(&quoted).unwrap().matches(PARA).count(), 3);
    }

    /// A list of names with a hundred commas is not the article it thanks: it
    /// neither outscores the article's sections nor counts as its prose.
    #[test]
    fn a_list_of_names_does_not_outscore_the_article() {
        let names: Vec<String> = (0..120).map(|i| format!("Name{i} Surname{i}")).collect();
        let names = format!("<p>Thanks to {}.</p>", names.join(", "));
        for html in [
            format!(
                "<body><div class=main><div class=story><p>{PARA}</p><p>{PARA} Two.</p><p>{PARA} Three.</p></div></div>\
                 <div class=acknowledgements><div>{names}</div></div></body>"
            ),
            format!(
                "<body><main><div class=s><p>{PARA}</p><p>{PARA} Two.</p></div><div class=s><p>{PARA} Three.</p>\
                 <p>{PARA} Four.</p></div><div class=s>{names}</div></main></body>"
            ),
        ] {
            let m = main_of(&html).unwrap();
            assert!(m.contains("Two.") && m.contains("Three."), "{m}");
        }
    }

    /// A sentence over half links (references, "in my lists of X, Y and Z") stays
    /// when its own words make a sentence; a line of links does not.
    #[test]
    fn a_sentence_of_links_stays_a_line_of_links_leaves() {
        let lists = "<a href=/a>the best hotels in the world</a>, \
            <a href=/b>the best luxury hotels in Oman</a>, <a href=/c>the best spas</a>";
        let html = format!(
            "<body><article><p>{PARA}</p><p>{PARA} Two.</p>\
             <p>This resort also features in my top ten lists of {lists}, and it is one \
             I return to every single year.</p><p>{PARA} End.</p>\
             <p><a href=/x>Home</a> <a href=/y>Hotels of the year and more</a> \
             <a href=/z>Spas</a> and news</p></article></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.contains("top ten lists of the best hotels"), "{m}");
        assert!(!m.contains("Hotels of the year"), "{m}");
    }

    /// A list of links to other stories after the article's last sentence goes with
    /// its label; a list inside the article, or one without links, stays.
    #[test]
    fn a_trailing_list_of_stories_leaves_the_article() {
        let stories: String = (0..4)
            .map(|i| format!("<li>Story {i} of the week, <a href=/s{i}>read it here</a></li>"))
            .collect();
        let html = format!(
            "<body><article><p>{PARA}</p><p>{PARA} Two.</p><p>{PARA} End.</p>\
             <div>More Great Stories</div><ul>{stories}</ul></article></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.ends_with("End."), "{m}");
        let steps: String = (0..4)
            .map(|i| format!("<li>Step {i}: mix the flour</li>"))
            .collect();
        let html = format!(
            "<body><article><p>{PARA}</p><p>{PARA} Two.</p><p>{PARA} End.</p><ul>{steps}</ul></article></body>"
        );
        assert!(main_of(&html).unwrap().ends_with("Step 3: mix the flour"));
    }

    /// A kicker or a promotion banner above the headline goes with the headline.
    #[test]
    fn lines_above_the_headline_are_not_the_article() {
        let html = format!(
            "<head><title>Rivers Rise After the Storm - Valley News</title></head><body><main>\
             <h2>New Laptops Now Available</h2><div>Weather</div><h1>Rivers Rise After the Storm</h1>\
             <p>{PARA}</p><p>{PARA} Two.</p></main></body>"
        );
        assert_eq!(main_of(&html).unwrap(), format!("{PARA}\n{PARA} Two."));
        // A paragraph above the title's line is the article's: nothing goes.
        let html = format!(
            "<head><title>Rivers</title></head><body><main><p>{PARA} Lede.</p>\
             <h2>Rivers</h2><p>{PARA}</p><p>{PARA} Two.</p></main></body>"
        );
        assert!(main_of(&html).unwrap().starts_with(PARA), "lede kept");
    }

    /// An article in two boxes of a page (an introduction with one heading, the
    /// steps with another) is given whole when the second box scores close to the
    /// first; a run of teasers of similar score does not pull in the page.
    #[test]
    fn an_article_in_two_boxes_is_given_whole() {
        let part = |name: &str, n: usize| -> String {
            let ps: String = (0..n)
                .map(|j| format!("<p>{PARA} {name}, line {j}.</p>"))
                .collect();
            format!(
                "<div class=wrap><div class=inner><div class=box><h2>{name}</h2>{ps}</div></div></div>"
            )
        };
        let html = format!(
            "<body><div class=page><section>{}<div class=spacer><div class=x>{}</div></div></section></div>\
             <footer><p>Copyright, all rights reserved, the company, its owners, and agents.</p></footer></body>",
            part("Before you begin", 4),
            part("The steps", 6)
        );
        let m = main_of(&html).unwrap();
        assert!(m.contains("Before you begin, line 3."), "{m}");
        assert!(m.contains("The steps, line 5."), "{m}");
        assert!(!m.contains("Copyright"), "{m}");
    }

    /// A page builder's blocks side by side: an intro wrapped deeper than the body
    /// (so that its wrapper scores little) is still a part of the article when what
    /// it wraps scores like a part of it; the teasers beside them are not.
    #[test]
    fn a_deeply_wrapped_part_of_the_article_is_in_it() {
        let intro = "Salt, pepper, oil, garlic, onions, lemons, thyme, bay leaves, and a pinch \
            of sugar go in first, in that order.";
        let intro: String = (0..3).map(|_| format!("<p>{intro}</p>")).collect();
        let body: String = (0..9)
            .map(|j| format!("<p>{PARA} Body, line {j}.</p>"))
            .collect();
        let teasers: String = (0..4)
            .map(|i| {
                format!(
                    "<div class=teaser><h3><a href=/s{i}>Teaser {i}: the headline of \
                     another story</a></h3><p>What it says, in brief...</p></div>"
                )
            })
            .collect();
        let html = format!(
            "<body><div class=page>\
             <div class=block><div class=wrap><div class=inner><div class=text>{intro}</div></div></div></div>\
             <div class=block><img src=a.jpg></div>\
             <div class=wrap><div class=inner><div class=text>{body}</div></div></div>\
             <div class=more>{teasers}</div></div></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.starts_with("Salt, pepper"), "{m}");
        assert!(m.contains("Body, line 8."), "{m}");
        assert!(!m.contains("Teaser"), "{m}");
    }

    #[test]
    fn words_of_scripts_without_spaces() {
        assert_eq!(words("three plain words"), 3);
        assert_eq!(words("谷歌在2014年收购的人工智能公司"), 1 + 12 / 2);
        assert!(prose(
            "这款产品具有极其重要的意义，因为这意味着未来的人工智能技术可能不需要人类来教它。"
        ));
    }

    #[test]
    fn comments_longer_than_the_article_do_not_replace_it() {
        let paras: String = (0..4)
            .map(|j| format!("<p>{PARA} Story {j}.</p>"))
            .collect();
        let comments: String = (0..20)
            .map(|j| format!("<li><p>{PARA} Reader {j} says so, at length, twice.</p></li>"))
            .collect();
        let html = format!(
            "<body><div class=main><h1>Title</h1>{paras}</div>\
             <ul class=comments>{comments}</ul></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.contains("Story 2."), "{m}");
        assert!(!m.contains("Reader"), "{m}");
        // A footer's disclaimer is no more the article than comments are.
        let html = format!(
            "<body><div class=main><p>{PARA} Story.</p></div><footer><div>\
             {}</div></footer></body>",
            (0..4)
                .map(|j| format!("<p>{PARA} Disclaimer {j}.</p>"))
                .collect::<String>()
        );
        let m = main_of(&html).unwrap();
        assert!(m.contains("Story."), "{m}");
        assert!(!m.contains("Disclaimer"), "{m}");
        // Nothing else on the page: the box is what there is.
        let html = format!("<body><div class=sidebar>{paras}</div></body>");
        assert!(main_of(&html).unwrap().contains("Story 2."));
    }

    #[test]
    fn a_table_in_a_figure_is_the_articles() {
        let html = format!(
            "<body><article><p>{PARA} Before.</p><figure class=wp-block-table><table>\
             <tr><td>Pros</td><td>Cons</td></tr><tr><td>Fast to build</td><td>Costly</td></tr>\
             </table><figcaption>Table 1: a caption</figcaption></figure><p>{PARA} After.</p>\
             <figure><img src=a.jpg><figcaption>A photo of the author</figcaption></figure>\
             </article></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.contains("Fast to build\nCostly"), "{m}");
        assert!(!m.contains("Table 1"), "{m}");
        assert!(!m.contains("photo of the author"), "{m}");
    }

    #[test]
    fn a_linkless_part_between_pictures_is_in_the_article() {
        // A site builder's text boxes between galleries: the parts after the first
        // score about half of it (under the 0.6 that a box with links needs).
        let text = |from: usize, n: usize| -> String {
            let ps: String = (from..from + n)
                .map(|j| format!("<p>{PARA} Step {j}.</p>"))
                .collect();
            format!("<div class=box><div class=inner><div class=rich>{ps}</div></div></div>")
        };
        let gallery = "<div class=box><div class=gallery><img src=a.jpg></div></div>";
        let teasers: String = (0..3)
            .map(|j| {
                format!(
                    "<p><a href=/s{j}>Another story {j}, as sites headline it</a>: in brief.</p>"
                )
            })
            .collect();
        let html = format!(
            "<body><div class=page>{}{gallery}{}{gallery}<div class=box><div class=inner>\
             <div class=rich>{teasers}</div></div></div></div></body>",
            text(0, 6),
            text(6, 3)
        );
        let m = main_of(&html).unwrap();
        assert!(m.contains("Step 0.") && m.contains("Step 8."), "{m}");
        assert!(!m.contains("Another story"), "{m}");
    }

    /// The tail rules take turns: a short sign-off after the call to support the
    /// site, a "While you are here…" before it.
    #[test]
    fn promotions_and_short_lines_at_the_end_go_together() {
        let html = format!(
            "<body><article><p>{PARA}</p><p>{PARA} Two.</p><p>{PARA} End.</p>\
             <p>While you are here…</p>\
             <p>If you enjoyed reading this post, would you consider supporting our work? Just click here.</p>\
             <p>All the best, Max</p></article></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.ends_with("End."), "{m}");
        // A script's placeholder is not the article's.
        let html = format!(
            "<body><article><p>{PARA}</p><p>Loading prices for your region…</p>\
             <p>{PARA} Two.</p><p>{PARA} End.</p></article></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(!m.contains("Loading"), "{m}");
    }

    /// An FAQ's answers in collapsed accordion panels (`display:none` until a click)
    /// are the page's text.
    #[test]
    fn collapsed_accordion_answers_are_in_the_article() {
        let faq: String = (0..4)
            .map(|i| {
                format!(
                    "<div><button aria-controls=a{i}>Question {i}?</button>\
                     <div id=a{i} role=region aria-labelledby=q{i} style='display:none'>\
                     <p>{PARA} Answer {i}.</p></div></div>"
                )
            })
            .collect();
        let html = format!("<body><article><p>{PARA}</p><p>{PARA} Two.</p>{faq}</article></body>");
        let m = main_of(&html).unwrap();
        assert!(m.contains("Answer 0.") && m.contains("Answer 3."), "{m}");
    }

    /// A press release closes with the company's presentation under "About <name>".
    #[test]
    fn the_publishers_presentation_closes_the_article() {
        let html = format!(
            "<body><article><p>{PARA}</p><p>{PARA} Two.</p><p>{PARA} Three.</p>\
             <p>{PARA} Four.</p><p>{PARA} Five.</p><p>{PARA} End.</p><h3>About Acme Media</h3>\
             <p>Acme Media is a recognized leader in digital media, with offices in ten cities.</p>\
             </article></body>"
        );
        let m = main_of(&html).unwrap();
        assert!(m.ends_with("End."), "{m}");
    }
}
