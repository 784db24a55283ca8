//! What the streaming XML readers share (the sitemap parser, the office document and
//! feed readers): the characters entity references stand for.

use quick_xml::events::BytesRef;

/// The character an entity reference stands for: a character reference (`&#38;`,
/// `&#x26;`) or one of XML's five predefined entities; `None` for any other (trawl
/// expands no entity a document declares).
pub fn entity_char(r: &BytesRef<'_>) -> Option<char> {
    match r.resolve_char_ref() {
        Ok(Some(c)) => Some(c),
        Ok(None) => match r.as_ref() {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => None,
        },
        Err(_) => None,
    }
}
