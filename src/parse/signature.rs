//! Page signatures: an exact one (blake3 of the normalized text, for exact
//! duplicate detection) and a 64-bit SimHash over word 3-shingles (for near
//! duplicates: pages whose SimHashes differ in few bits share most shingles).

use super::text::for_each_token;

/// Lowercased word tokens joined by single spaces: the normalized text signed.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for_each_token(text, |t| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    });
    out
}

/// blake3 of the normalized text, hex; `None` when the text has no words.
pub fn text_signature(text: &str) -> Option<String> {
    let n = normalize(text);
    (!n.is_empty()).then(|| blake3::hash(n.as_bytes()).to_hex().to_string())
}

/// Both signatures of a text, tokenizing it once: (blake3 of the normalized
/// text, SimHash); `(None, None)` when the text has no words.
pub fn sign(text: &str) -> (Option<String>, Option<u64>) {
    let mut norm = String::with_capacity(text.len());
    let mut hashes: Vec<u64> = Vec::with_capacity(text.len() / 6 + 1);
    for_each_token(text, |t| {
        if !norm.is_empty() {
            norm.push(' ');
        }
        norm.push_str(t);
        hashes.push(token_hash(t));
    });
    if hashes.is_empty() {
        return (None, None);
    }
    (
        Some(blake3::hash(norm.as_bytes()).to_hex().to_string()),
        simhash_of(&hashes),
    )
}

/// blake3 of raw bytes, hex.
pub fn bytes_signature(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// FNV-1a over the token's bytes, then the splitmix64 finalizer.
fn token_hash(t: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in t.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

/// splitmix64's finalizer: every input bit affects every output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Charikar's SimHash of the text's word 3-shingles (fewer than 3 words: the
/// words themselves). Each token is hashed once (FNV-1a + splitmix64); a
/// shingle's hash mixes its three token hashes at different rotations, so word
/// order matters. `None` when the text has no words.
pub fn simhash(text: &str) -> Option<u64> {
    let mut toks: Vec<u64> = Vec::new();
    for_each_token(text, |t| toks.push(token_hash(t)));
    simhash_of(&toks)
}

fn simhash_of(toks: &[u64]) -> Option<u64> {
    if toks.is_empty() {
        return None;
    }
    // Count, per bit, the features that have it set (a branch-free loop the
    // compiler vectorizes); a bit of the result is set when more than half
    // of the features have it, i.e. when Charikar's +1/-1 sum is positive.
    let mut ones = [0u32; 64];
    let mut add = |v: u64| {
        for (bit, c) in ones.iter_mut().enumerate() {
            *c += ((v >> bit) & 1) as u32;
        }
    };
    let features = if toks.len() < 3 {
        toks.iter().for_each(|&t| add(t));
        toks.len()
    } else {
        for w in toks.windows(3) {
            add(mix(w[0] ^ w[1].rotate_left(21) ^ w[2].rotate_left(42)));
        }
        toks.len() - 2
    };
    let mut out = 0u64;
    for (bit, c) in ones.iter().enumerate() {
        if 2 * (*c as usize) > features {
            out |= 1 << bit;
        }
    }
    Some(out)
}

/// Number of differing bits.
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "The quick brown fox jumps over the lazy dog near the river bank while the farmer \
        watches from his porch and the sun sets slowly behind the hills of the quiet valley where \
        children play until dinner is ready and the evening bells ring across the old town square \
        announcing the end of another long summer day in the countryside far from the noisy city";

    #[test]
    fn near_identical_texts_are_close() {
        let a = simhash(BASE).unwrap();
        let b = simhash(&BASE.replace("lazy dog", "sleepy dog")).unwrap();
        let c = simhash(&format!("{BASE} Posted on Monday.")).unwrap();
        assert!(hamming(a, b) <= 12, "edit: {}", hamming(a, b));
        assert!(hamming(a, c) <= 12, "append: {}", hamming(a, c));
        assert_eq!(
            simhash(&BASE.to_uppercase()),
            Some(a),
            "case does not matter"
        );
    }

    #[test]
    fn unrelated_texts_are_far() {
        let a = simhash(BASE).unwrap();
        let other = "Parquet files store columnar data in row groups with pages compressed by \
            zstd and statistics that let query engines skip data; arrow record batches are the \
            in-memory form used by readers and writers across many languages and systems today";
        let b = simhash(other).unwrap();
        assert!(hamming(a, b) >= 18, "unrelated: {}", hamming(a, b));
    }

    #[test]
    fn exact_signature_ignores_spacing_and_case() {
        assert_eq!(
            text_signature("Hello  World"),
            text_signature("hello\nworld!")
        );
        assert_ne!(text_signature("hello world"), text_signature("hello there"));
        assert_eq!(text_signature("  "), None);
        assert_eq!(simhash(""), None);
        assert_eq!(bytes_signature(b"x").len(), 64);
        let t = "One two three, four five!";
        assert_eq!(sign(t), (text_signature(t), simhash(t)));
        assert_eq!(sign(" "), (None, None));
    }
}
