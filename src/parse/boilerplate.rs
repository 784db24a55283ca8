//! Boilerplate recognised by its words, for main text: the blocks a page wraps
//! around an article inside the article's own element, which markup alone does not
//! tell apart (the page names no class, or names it like the article).
//!
//! - [`is_label`]: a block that is only a widget's label ("Advertisement", "Share",
//!   "Close"), or a credit line with a `©`, anywhere.
//! - [`is_dateline`]: a short block holding a date or time ("Updated 1:39 am EST,
//!   Wednesday, November 20, 2019"), anywhere but in headings and lists.
//! - [`is_byline`]: "By Jane Doe", at the top.
//! - [`is_promo`]: a newsletter, follow-us, share-it, copyright or author-contact
//!   line, at the end.
//!
//! The word lists are English first, with the commonest equivalents in German,
//! French, Spanish, Italian, Portuguese, Polish, Indonesian and Russian.

/// Labels that are never the article's text when they are a block of their own: ad
/// slots, share buttons, widget chrome (compared lowercased, without the punctuation
/// around them).
const LABELS: &[&str] = &[
    "ad",
    "ads",
    "advert",
    "advertisement",
    "advertising",
    "sponsored",
    "anzeige",
    "werbung",
    "publicité",
    "publicidad",
    "pubblicità",
    "publicidade",
    "iklan",
    "реклама",
    "close",
    "caption",
    "enlarge image",
    "share",
    "share this",
    "share this article",
    "share this story",
    "sharing is caring",
    "tweet",
    "pinterest",
    "facebook",
    "twitter",
    "linkedin",
    "whatsapp",
    "email",
    "print",
    "comments",
    "comment",
    "leave a comment",
    "post comment",
    "read more",
    "continue reading",
    "related",
    "related articles",
    "related stories",
    "trending",
    "trending now",
    "most popular",
    "more",
    "previous post",
    "next post",
    "this slideshow requires javascript",
    "comments are closed",
    "no comments",
    "table of contents",
    "contents",
    "in this article",
    "on this page",
    "was this article helpful",
    "was this helpful",
    "most read",
    "latest articles",
    "latest news",
    "weiterlesen",
    "zum weiterlesen",
    "schon gelesen",
    "inhaltsverzeichnis",
    "inhalt",
    "keine kommentare",
    "meistgelesen",
    "meistgelesene artikel",
    "neueste artikel",
    "lire la suite",
    "sommaire",
    "table des matières",
    "leer más",
    "índice",
    "tabla de contenidos",
    "continua a leggere",
    "indice",
    "leia mais",
    "czytaj więcej",
    "czytaj dalej",
    "spis treści",
    "selengkapnya",
    "daftar isi",
    "читать далее",
    "содержание",
    "print recipe",
    "kommentare",
    "kommentieren",
    "teilen",
    "drucken",
    "rezept drucken",
    "commentaires",
    "partager",
    "imprimer",
    "comentarios",
    "compartir",
    "imprimir",
    "commenti",
    "condividi",
    "stampa",
    "comentários",
    "compartilhar",
    "komentarze",
    "udostępnij",
    "komentar",
    "bagikan",
    "комментарии",
    "поделиться",
];

/// Whether `text` is one of the [`LABELS`], a photo credit (a line of at most 40
/// words with a `©`: "... La Paz, November 19, 2019. © Reuters / David Mercado"), or
/// a script's placeholder ("Loading prices for your region…", see [`LOADING`]).
pub fn is_label(text: &str) -> bool {
    let t = text.trim_matches(|c: char| !c.is_alphanumeric());
    let l = t.to_lowercase();
    (t.len() <= 40 && LABELS.contains(&l.as_str()))
        || ((text.trim_end().ends_with('…') || text.trim_end().ends_with("..."))
            && t.split_whitespace().count() <= 6
            && LOADING.iter().any(|o| l.starts_with(o)))
        || (text.contains('©') && text.split_whitespace().count() <= 40)
        || (t.split_whitespace().count() <= 5
            && LABEL_OPENINGS.iter().any(|o| {
                l.strip_prefix(o)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', ':', '[']))
            }))
}

/// Openings of the lines a script replaces once it has fetched what they stand for,
/// ending with an ellipsis: "Loading…", "Loading specifications...", "Wird geladen…".
const LOADING: &[&str] = &[
    "loading",
    "wird geladen",
    "lädt",
    "chargement",
    "cargando",
    "caricamento",
    "carregando",
    "ładowanie",
    "загрузка",
];

/// Openings of the titles of a site's boxes of links to more of it ("Related
/// articles", "See also", "More from The Times"), a title of five words or fewer.
const LABEL_OPENINGS: &[&str] = &[
    "related",
    "see also",
    "you may also like",
    "you might also like",
    "read next",
    "more from",
    "more stories",
    "recommended for you",
    "recommended reading",
    "continue reading",
    "weitere artikel",
    "lesen sie auch",
    "lesen sie mehr",
    "auch interessant",
    "mehr zum thema",
    "das könnte sie auch interessieren",
    "empfohlene artikel",
    "empfohlene beiträge",
    "ähnliche artikel",
    "ähnliche beiträge",
    "lire aussi",
    "à lire aussi",
    "à lire également",
    "vous aimerez aussi",
    "sur le même sujet",
    "leia também",
    "veja também",
    "você também pode gostar",
    "lee también",
    "te puede interesar",
    "también te puede interesar",
    "leggi anche",
    "potrebbe interessarti",
    "ti potrebbe interessare",
    "zobacz także",
    "zobacz też",
    "czytaj także",
    "czytaj też",
    "polecane",
    "podobne",
    "baca juga",
    "artikel terkait",
    "читайте также",
    "смотрите также",
    "по теме",
    "credit:",
    "credits:",
    "photo:",
    "image:",
    "foto:",
    "bild:",
    "titelbild:",
    "quelle:",
    "print recipe",
    "rezept drucken",
    "mehr zum",
    "mehr themen",
    "weitere informationen",
    "weiterführende informationen",
    "empfehlungen aus der redaktion",
    "das könnte dich",
    "diesen artikel teilen",
    "war der artikel",
    "keine kommentare",
    "jump to recipe",
    "valora esta noticia",
    "más sobre",
    "mehr zu",
    "mehr interessantes",
];

/// Month names and their abbreviations (English, German, French, Spanish, Italian,
/// Portuguese, Indonesian).
const MONTHS: &[&str] = &[
    "jan",
    "january",
    "feb",
    "february",
    "mar",
    "march",
    "apr",
    "april",
    "may",
    "jun",
    "june",
    "jul",
    "july",
    "aug",
    "august",
    "sep",
    "sept",
    "september",
    "oct",
    "october",
    "nov",
    "november",
    "dec",
    "december",
    "januar",
    "februar",
    "märz",
    "mai",
    "juni",
    "juli",
    "oktober",
    "dezember",
    "janvier",
    "février",
    "mars",
    "avril",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
    "gennaio",
    "febbraio",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "settembre",
    "ottobre",
    "dicembre",
    "janeiro",
    "fevereiro",
    "março",
    "maio",
    "junho",
    "julho",
    "setembro",
    "outubro",
    "dezembro",
    "januari",
    "februari",
    "maret",
    "agustus",
    "desember",
];

/// Words of at most this many make a dateline.
const DATELINE_WORDS: usize = 12;

/// Whether `text` is a dateline: at most [`DATELINE_WORDS`] words with a clock time
/// (`6:45`), a numeric date (`11/18/19`, `2019-11-20`, `19.11.2019`), or a year
/// next to a month name.
pub fn is_dateline(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || words.len() > DATELINE_WORDS {
        return false;
    }
    let (mut year, mut month) = (false, false);
    for w in &words {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        if is_clock(w) || is_numeric_date(w) {
            return true;
        }
        if w.len() == 4 && w.bytes().all(|b| b.is_ascii_digit()) {
            year |= matches!(w.parse::<u32>(), Ok(1990..=2039));
        } else if w.len() <= 10 {
            month |= MONTHS.contains(&w.to_lowercase().as_str());
        }
    }
    year && month
}

/// `6:45`, `17:27:46`.
fn is_clock(w: &str) -> bool {
    let parts: Vec<&str> = w.split(':').collect();
    parts.len() >= 2
        && parts.len() <= 3
        && parts[0].len() <= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[1..].iter().all(|p| p.len() == 2)
}

/// `11/18/19`, `2019-11-20`, `19.11.2019`: three runs of digits split by one of `/-.`
/// with a year (2 or 4 digits) first or last.
fn is_numeric_date(w: &str) -> bool {
    for sep in ['/', '-', '.'] {
        let parts: Vec<&str> = w.split(sep).collect();
        if parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()))
            && (parts[0].len() == 4 || parts[2].len() == 4 || parts.iter().all(|p| p.len() <= 2))
        {
            return true;
        }
    }
    false
}

/// Whether `text` is a byline: "By Jane Doe", "Written by Jane Doe" (at most 10 words).
pub fn is_byline(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let n = words.clone().count();
    let first = words.next().unwrap_or("").to_lowercase();
    let mut next = words.next().unwrap_or("");
    if first == "written" && next.eq_ignore_ascii_case("by") {
        next = words.next().unwrap_or("");
    } else if !["by", "von", "par", "por", "di", "oleh"].contains(&first.as_str()) {
        return false;
    }
    // A name follows: "By the time ..." is a sentence.
    n <= 10 && next.chars().next().is_some_and(char::is_uppercase)
}

/// Phrases of the lines a site appends to every article: newsletters, follow-us and
/// share-it calls, copyright, contact lines, tag lists.
const PROMO: &[&str] = &[
    "subscribe",
    "newsletter",
    "sign up",
    "signup",
    "follow us",
    "follow him",
    "follow her",
    "follow me",
    "follow them",
    "on twitter",
    "on facebook",
    "on instagram",
    "share it",
    "share this",
    "click here",
    "all rights reserved",
    "©",
    "copyright",
    "be reached at",
    "reporting by",
    "editing by",
    "writing by",
    "email us",
    "contact us",
    "like this story",
    "related tags",
    "tags:",
    "filed under",
    "tell us what",
    "see more photos",
    "read more",
    "more stories",
    "letter to the editor",
    "letters to the editor",
    "download our app",
    "download the app",
    "for ios and android",
    "if you enjoyed",
    "support our work",
    "supporting our work",
    "what you think about this article",
    "bookmark the permalink",
    "this entry was posted in",
    "get the latest news",
    "to post a comment",
    "logged in to comment",
    "um kommentare zu schreiben",
    "unlimited digital access",
    "support independent journalism",
    "donate now",
    "donate via",
    "please donate",
    "cc-by",
    "abonnieren",
    "folgen sie uns",
    "folge uns",
    "abonnez",
    "suivez-nous",
    "suscríbete",
    "síguenos",
    "siguenos",
    "iscriviti",
    "seguici",
    "assine",
    "siga-nos",
];

/// Words of at most this many make a promotional line.
const PROMO_WORDS: usize = 60;

/// Whether `text` is a promotional or contact line (see [`PROMO`]), at most
/// [`PROMO_WORDS`] words.
pub fn is_promo(text: &str) -> bool {
    if text.split_whitespace().count() > PROMO_WORDS {
        return false;
    }
    let l = text.to_lowercase();
    PROMO.iter().any(|p| l.contains(p))
}

/// Openings of an author's presentation after the article ("About the author",
/// "Über den Autor"), compared lowercased.
const AUTHOR_BIO: &[&str] = &[
    "about the author",
    "about the authors",
    "about the writer",
    "about the contributor",
    "about the expert",
    "about the reviewer",
    "meet the author",
    "author bio",
    "über den autor",
    "über die autorin",
    "à propos de l'auteur",
    "à propos de l’auteur",
    "sobre el autor",
    "sobre la autora",
    "sobre o autor",
    "sull'autore",
    "sull’autore",
];

/// Whether `text` opens an author's presentation: a heading such as "About the
/// author", or a paragraph starting "About the author:".
pub fn is_author_bio(text: &str) -> bool {
    let l = text.trim_start().to_lowercase();
    AUTHOR_BIO.iter().any(|p| {
        l.strip_prefix(p).is_some_and(|rest| {
            let rest = rest.trim_start();
            rest.is_empty() || rest.starts_with([':', '-', '–', '—', '|'])
        })
    })
}

/// Whether `text` is the heading of a presentation of the publisher, the company
/// or the writer that closes a press release or a post: "About SiliconANGLE
/// Media", "About Us", "Über Moritz Bachmann"; at most five words, a capitalized
/// name after "About" / "Über" (not "About the phrase ...", a section of the
/// article).
pub fn is_about_heading(text: &str) -> bool {
    let t = text.trim();
    let mut words = t.split_whitespace();
    let n = words.clone().count();
    let first = words.next().unwrap_or("");
    let next = words.next().unwrap_or("");
    (2..=5).contains(&n)
        && !t.ends_with(['.', '?', '!', ':'])
        && (first == "About" || first == "Über" || first == "ABOUT")
        && next.chars().next().is_some_and(char::is_uppercase)
        && !["The", "This", "These", "Those", "THE"].contains(&next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        for t in [
            "Advertisement",
            "ADVERT",
            "  Share this: ",
            "Sharing is caring!",
            "Iklan",
            "Table of contents",
            "Inhaltsverzeichnis",
            "Zum Weiterlesen:",
            "Comments are closed.",
            "Lesen Sie auch",
            "Das könnte Sie auch interessieren!",
            "Zobacz także",
            "Veja Também:",
            "Читайте также",
            "Loading…",
            "Loading prices for your region…",
            "Wird geladen ...",
        ] {
            assert!(is_label(t), "{t}");
        }
        assert!(is_label(
            "A cyclist rides past the plant. © Reuters / David Mercado"
        ));
        for t in [
            "Share this with your friends today",
            "Advertising works",
            "Lesen Sie auch, was die Kommission dazu im Jahr 2019 schrieb",
            "The contents of the report",
            "Loading the dishwasher",
            "Loading times fell by half.",
            "Loading the truck took the crew of six all night...",
            "",
        ] {
            assert!(!is_label(t), "{t}");
        }
    }

    #[test]
    fn datelines() {
        for t in [
            "Updated 1:39 am EST, Wednesday, November 20, 2019",
            "Posted: Fri 6:45 PM, Feb 16, 2018 |",
            "By Justine Coleman - 11/18/19 11:04 PM EST",
            "2019-11-20 17:27:46 Marcus De Guzman",
            "sexta-feira, 22 de outubro de 2010 às 20:13",
            "Published 19.11.2019",
            "November 18, 2019",
        ] {
            assert!(is_dateline(t), "{t}");
        }
        for t in [
            "The plant opened in March 2019 and closed a year later, its workers said.",
            "In 2019 the river rose.",
            "The ratio was 3:1 against.",
            "",
        ] {
            assert!(!is_dateline(t), "{t}");
        }
    }

    #[test]
    fn bylines_and_promos() {
        assert!(is_byline("By Jane Doe, Staff Writer"));
        assert!(is_byline("Written by Regan"));
        assert!(!is_byline("By the time the water rose, the town had left."));
        assert!(!is_byline("Bystanders saw it."));
        assert!(is_promo(
            "Get the latest updates right in your inbox. Subscribe to our newsletters."
        ));
        assert!(is_promo(
            "Amy may be reached at amy@example.com. Follow her on Twitter."
        ));
        assert!(!is_promo(
            "The council met on Tuesday to discuss the budget."
        ));
        assert!(is_promo(
            "(Reporting by Greg Roe; additional reporting by Ann Poe; editing by Mark Doe.)"
        ));
    }

    #[test]
    fn author_bios_and_box_titles() {
        for t in [
            "About the Author",
            "About the author: Craig is a photographer based in Porto.",
            "Über den Autor",
            "ABOUT THE AUTHORS",
        ] {
            assert!(is_author_bio(t), "{t}");
        }
        for t in [
            "About the study",
            "About the authority of the court",
            "Author",
        ] {
            assert!(!is_author_bio(t), "{t}");
        }
        for t in [
            "Related articles",
            "Related:",
            "See also[edit]",
            "More from The Valley News",
            "You may also like",
        ] {
            assert!(is_label(t), "{t}");
        }
        for t in [
            "Related work shows the river rose faster than the models said.",
            "Relatedness",
            "More from less: how the valley saves water each summer",
        ] {
            assert!(!is_label(t), "{t}");
        }
    }

    #[test]
    fn about_headings() {
        for t in [
            "About SiliconANGLE Media",
            "About Us",
            "Über Moritz Bachmann",
            "ABOUT ACME",
        ] {
            assert!(is_about_heading(t), "{t}");
        }
        for t in [
            "About the Osprey Atmos AG",
            "About filing your tax return",
            "About",
            "About Acme: the company was founded in 1990.",
            "About Python and its many uses in science today",
        ] {
            assert!(!is_about_heading(t), "{t}");
        }
    }
}
