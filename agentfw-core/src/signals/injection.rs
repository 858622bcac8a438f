//! How much a text reads like a prompt injection: a linear model over hashed word features
//! of the folded text, scored on blocks of the text and on windows inside each block, so
//! that one injected paragraph in a long document is not averaged away, and harmless
//! paragraphs side by side do not add up to one.
//!
//! The text is cut into blocks where a reader sees one part end and another begin: at blank
//! lines and at code fences (a fenced block is a block of its own). Each block is folded
//! ([`crate::normalize::fold`]) and cut into tokens: runs of letters, digits, `_` and
//! non-ASCII characters (words), and runs of ASCII punctuation (only their first 4 bytes
//! count). A word that is a long number, a hex string, a long run or a mix of letters and
//! digits of 12 or more characters stands for its shape, not itself, so random ids, hashes
//! and base64 all look alike to the model. Each token adds the weights of four features:
//! itself, the pair it ends, the triple it ends, and (for words of more than five bytes)
//! its first five bytes. A feature is a 32-bit hash, looked up in a table that holds only
//! the features the trainer kept (seen in enough training texts, with a weight that
//! matters): a feature the model never learned weighs nothing, instead of whatever shared
//! its bucket. A window's score is the logistic of the model's intercept plus its weights'
//! sum; the text's score is the highest window's of any block.
//!
//! Why blocks: a window's score is a sum, and a message that joins several unrelated
//! parts (a paragraph, a code block, a command and its output) used to put several mildly
//! imperative but harmless lines into one window, whose sum then read like an injection.
//! An injection is written as one part; cutting at the seams a writer leaves keeps it whole.
//!
//! The trainer (`rules/model/train.py`) computes the same blocks and features in Python;
//! the shared vectors in `vectors/injection.json` hold the blocks, features and scores of
//! sample texts, and both sides check them.

use crate::normalize::fold;

/// The first bytes of a model file.
const MAGIC: &[u8; 8] = b"AFWINJ03";
/// Magic, bits, window, stride, longest probe, intercept, scale.
const HEADER: usize = 8 + 4 + 4 + 4 + 4 + 8 + 8;
/// Punctuation runs count by their first bytes only.
const PUNCT_BYTES: usize = 4;
/// Words of more than this many bytes also count by their first this-many bytes.
const PREFIX: usize = 5;

/// The first byte of a shape, which no word has (it is a control, so a separator).
const SHAPE: u8 = 1;
/// What a word stands for when it is not itself.
const SHAPE_NUMBER: &[u8] = b"\x01num";
const SHAPE_HEX: &[u8] = b"\x01hex";
const SHAPE_LONG: &[u8] = b"\x01long";
const SHAPE_MIXED: &[u8] = b"\x01mix";

/// The kinds of feature, mixed into their hashes so that they do not share weights.
const UNIGRAM: u32 = 1;
const BIGRAM: u32 = 2;
const TRIGRAM: u32 = 3;
const WORD_PREFIX: u32 = 4;

/// Why a model file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("the injection model does not start with `AFWINJ03`")]
    Magic,
    #[error("the injection model's header is cut short")]
    Header,
    #[error("the injection model's table has 2^{bits} slots; 2^8 to 2^24 are supported")]
    Bits { bits: u32 },
    #[error("the injection model's windows ({window} tokens, stride {stride}) are not usable")]
    Window { window: u32, stride: u32 },
    #[error("the injection model has {got} bytes of table, {want} expected")]
    Weights { got: usize, want: usize },
    #[error("the injection model's longest probe ({probe}) is longer than its table")]
    Probe { probe: u32 },
    #[error("the injection model's intercept or scale is not a finite number")]
    NotFinite,
}

impl ModelError {
    /// A stable code for logs and bindings.
    pub fn code(&self) -> &'static str {
        "signals.model"
    }
}

/// A linear injection model, read from its file without copying the table.
#[derive(Clone, Debug)]
pub struct Model<'a> {
    bits: u32,
    window: usize,
    stride: usize,
    /// The longest run of slots a lookup must look at: a feature not found within it is
    /// not in the table.
    probe: u32,
    intercept: f64,
    scale: f64,
    /// `1 << bits` little-endian `u32` feature hashes (0 for an empty slot), open
    /// addressing with linear probing from the hash's top `bits` bits.
    keys: &'a [u8],
    /// `1 << bits` little-endian `i16` weights, one per slot.
    weights: &'a [u8],
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn f64_at(bytes: &[u8], at: usize) -> Option<f64> {
    Some(f64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

impl<'a> Model<'a> {
    /// Reads a model file: `AFWINJ03`, then bits, window, stride and longest probe as `u32`,
    /// intercept and scale as `f64`, then `1 << bits` keys as `u32` and as many weights as
    /// `i16`, all little-endian.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ModelError> {
        if bytes.get(..MAGIC.len()) != Some(MAGIC.as_slice()) {
            return Err(ModelError::Magic);
        }
        let header = (|| {
            let ints = (u32_at(bytes, 8)?, u32_at(bytes, 12)?, u32_at(bytes, 16)?, u32_at(bytes, 20)?);
            Some((ints, f64_at(bytes, 24)?, f64_at(bytes, 32)?))
        })();
        let ((bits, window, stride, probe), intercept, scale) = header.ok_or(ModelError::Header)?;
        if !(8..=24).contains(&bits) {
            return Err(ModelError::Bits { bits });
        }
        if window == 0 || stride == 0 || stride > window || window > 4096 {
            return Err(ModelError::Window { window, stride });
        }
        if !intercept.is_finite() || !scale.is_finite() {
            return Err(ModelError::NotFinite);
        }
        let table = bytes.get(HEADER..).unwrap_or_default();
        let slots = 1usize << bits;
        if table.len() != slots * 6 {
            return Err(ModelError::Weights { got: table.len(), want: slots * 6 });
        }
        if probe as usize >= slots {
            return Err(ModelError::Probe { probe });
        }
        let (keys, weights) = table.split_at(slots * 4);
        Ok(Self { bits, window: window as usize, stride: stride as usize, probe, intercept, scale, keys, weights })
    }

    /// The weight of a feature, 0 if the model does not hold it.
    fn weight(&self, feature: u32) -> i32 {
        let key = feature.max(1);
        let mask = (1u32 << self.bits) - 1;
        let start = feature >> (32 - self.bits);
        for step in 0..=self.probe {
            let slot = (start.wrapping_add(step) & mask) as usize;
            match u32_at(self.keys, slot * 4) {
                Some(k) if k == key => {
                    let w = self.weights.get(slot * 2..slot * 2 + 2).and_then(|w| <[u8; 2]>::try_from(w).ok());
                    return w.map_or(0, |w| i32::from(i16::from_le_bytes(w)));
                }
                Some(0) | None => return 0,
                Some(_) => {}
            }
        }
        0
    }

    /// The score of a text (a message body, not yet folded), 0 to 1: the highest of the
    /// windows of its blocks. A text with no tokens scores 0.
    pub fn score(&self, text: &str) -> f64 {
        self.explain(text).1
    }

    /// The logistic of the intercept plus `sum` weights.
    fn logistic(&self, sum: i64) -> f64 {
        let z = self.intercept + self.scale * sum as f64;
        1.0 / (1.0 + (-z).exp())
    }

    /// The highest weight sum over the windows of a folded block: one window if the block
    /// has at most `window` tokens, else windows starting every `stride` tokens that fit,
    /// and the last `window` tokens. `None` for a block with no tokens.
    fn best_window(&self, folded: &str, scratch: &mut Scratch) -> Option<i64> {
        scratch.ring.fill(0);
        let base = scratch.next;
        let (mut n, mut sum, mut best) = (0usize, 0i64, None::<i64>);
        for_each_feature_set(folded.as_bytes(), |features| {
            let at = base + n;
            let c: i64 =
                features.iter().filter(|&&f| scratch.recent.counts(f, at)).map(|&f| i64::from(self.weight(f))).sum();
            if let Some(old) = scratch.ring.get_mut(n % self.window) {
                sum += c - *old;
                *old = c;
            }
            n += 1;
            if n >= self.window && (n - self.window).is_multiple_of(self.stride) {
                best = Some(best.map_or(sum, |b| b.max(sum)));
            }
        });
        // The next block starts a window's worth of tokens later, so nothing of this one
        // counts as recent there: each block is scored as if it were alone.
        scratch.next = base + n + self.window;
        if n == 0 {
            return None;
        }
        // The last window (or the whole block, if it is shorter than one).
        Some(best.map_or(sum, |b| b.max(sum)))
    }

    /// The features (32-bit hashes) of each token of a folded block, for the shared vectors.
    pub fn features(&self, folded: &str) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        for_each_feature_set(folded.as_bytes(), |features| out.push(features.to_vec()));
        out
    }

    /// The weight sum of the best window of any block of `text` and the score, for the
    /// shared vectors.
    pub fn explain(&self, text: &str) -> (Option<i64>, f64) {
        let mut scratch = Scratch { ring: vec![0; self.window], recent: Recent::new(self.window), next: 0 };
        let best = blocks(text).into_iter().filter_map(|b| self.best_window(&fold(b), &mut scratch)).max();
        (best, best.map_or(0.0, |s| self.logistic(s)))
    }
}

/// What scoring the blocks of one text reuses from block to block.
struct Scratch {
    /// The weight sum of each of the last `window` tokens.
    ring: Vec<i64>,
    recent: Recent,
    /// The position the next block's first token counts at in `recent`.
    next: usize,
}

/// A part of a text with fewer words than this is not scored alone: it joins the parts after
/// it. Without this, an injection cut into a few words per part (a blank line after every
/// word or three) would be scored a few words at a time and never add up.
const SHORT_WORDS: usize = 12;

/// The blocks of `text` that are scored apart, in order: its parts (`parts`), where a run of
/// parts of fewer than [`SHORT_WORDS`] words each is one block with the part after it. Each
/// block is a slice of `text`.
pub fn blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut first = None::<usize>;
    let mut end = 0;
    for part in parts(text) {
        // Every part is a slice of `text`, so its offset is its distance from the start.
        let start = part.as_ptr() as usize - text.as_ptr() as usize;
        end = start + part.len();
        let from = *first.get_or_insert(start);
        if is_long(part) {
            out.extend(text.get(from..end));
            first = None;
        }
    }
    if let Some(from) = first {
        out.extend(text.get(from..end));
    }
    out
}

/// Whether `part` has at least [`SHORT_WORDS`] words: runs of anything but ASCII whitespace
/// (space, tab, line feed, carriage return, vertical tab, form feed).
fn is_long(part: &str) -> bool {
    part.split([' ', '\t', '\n', '\r', '\x0B', '\x0C']).filter(|w| !w.is_empty()).nth(SHORT_WORDS - 1).is_some()
}

/// The parts of `text`, in order: runs of lines between blank lines (lines of only spaces,
/// tabs and line-break characters) and code fences (lines starting with ```` ``` ```` or
/// `~~~` after indentation). A fenced part, fences included, is one part. Lines end at
/// `\n`; each part is a slice of `text`.
fn parts(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    // The byte range of the block being built, and whether it is inside a fence.
    let (mut open, mut fenced) = (None::<(usize, usize)>, false);
    let mut close = |open: &mut Option<(usize, usize)>| {
        if let Some(part) = open.take().and_then(|(s, e)| text.get(s..e)) {
            out.push(part);
        }
    };
    let mut start = 0;
    for line in text.split('\n') {
        let end = start + line.len();
        let visible = line.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\x0B' | '\x0C'));
        if visible.is_empty() {
            close(&mut open);
        } else {
            let fence = visible.starts_with("```") || visible.starts_with("~~~");
            if fence && !fenced {
                close(&mut open);
            }
            open = Some((open.map_or(start, |(s, _)| s), end));
            if fence && fenced {
                close(&mut open);
            }
            fenced ^= fence;
        }
        start = end + 1;
    }
    close(&mut open);
    out
}

/// Slots of the table that remembers when each feature last counted.
const RECENT: usize = 1024;

/// Which features count. A feature counts at a token unless it already counted within the
/// last `window` tokens, so a window sums each feature about once and a repeated token
/// (a table row, a list of ids, the same line pasted fifty times) cannot pile up weight.
/// The table is direct-mapped by the feature's low bits: a feature that lost its slot to
/// another counts again, which only makes a score a little higher.
struct Recent {
    slots: Vec<(u32, usize)>,
    window: usize,
}

impl Recent {
    fn new(window: usize) -> Self {
        Self { slots: vec![(0, 0); RECENT], window }
    }

    fn counts(&mut self, feature: u32, at: usize) -> bool {
        let key = feature.max(1);
        let Some(slot) = self.slots.get_mut(feature as usize % RECENT) else {
            return true;
        };
        if slot.0 == key && at - slot.1 < self.window {
            return false;
        }
        *slot = (key, at);
        true
    }
}

/// Calls `f` with the features of each token of `text`, in order.
fn for_each_feature_set(text: &[u8], mut f: impl FnMut(&[u32])) {
    let (mut t1, mut t2) = (0u32, 0u32);
    let mut indices = [0u32; 4];
    let mut leet = [0u8; LEET_MAX];
    let mut at = 0;
    while let Some(&b) = text.get(at) {
        if is_separator(b) {
            at += 1;
            continue;
        }
        let word = is_word(b);
        let len =
            text.get(at..).unwrap_or_default().iter().take_while(|&&c| !is_separator(c) && is_word(c) == word).count();
        let run = text.get(at..at + len).unwrap_or_default();
        at += len;
        let (bytes, prefix) = if word {
            // A hex id or a number keeps its shape; any other word is read in letters first.
            let shaped = shape(run);
            let bytes =
                if shaped == SHAPE_HEX || shaped == SHAPE_NUMBER { shaped } else { shape(unleet(run, &mut leet)) };
            let is_word = bytes.first() != Some(&SHAPE);
            (bytes, (is_word && bytes.len() > PREFIX).then(|| bytes.get(..PREFIX).unwrap_or_default()))
        } else {
            (run.get(..PUNCT_BYTES).unwrap_or(run), None)
        };
        let t = fnv1a(bytes);
        indices[0] = feature(UNIGRAM, t);
        indices[1] = feature(BIGRAM, combine(t1, t));
        indices[2] = feature(TRIGRAM, combine(combine(t2, t1), t));
        let count = match prefix {
            Some(p) => {
                indices[3] = feature(WORD_PREFIX, fnv1a(p));
                4
            }
            None => 3,
        };
        f(indices.get(..count).unwrap_or_default());
        (t2, t1) = (t1, t);
    }
}

/// Spaces, line breaks and ASCII controls separate tokens, and so does `_`, which joins
/// words without changing what they say (`ignore_all_previous`).
fn is_separator(b: u8) -> bool {
    b <= b' ' || b == 0x7F || b == b'_'
}

/// Letters, digits and the bytes of non-ASCII characters make words.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

/// The longest word [`unleet`] reads back (longer ones have a shape, not a spelling).
const LEET_MAX: usize = 24;

/// `word` with digits read as the letters they stand for in "leet" spelling (`pr3v10us`
/// is `previous`), when it is a word of at least two letters whose every digit is one of
/// `0 1 3 4 5 7`; else `word`. Version numbers and ids (`v2`, `k8s`, `sha256`) keep their
/// digits.
fn unleet<'a>(word: &'a [u8], buf: &'a mut [u8; LEET_MAX]) -> &'a [u8] {
    let letters = word.iter().filter(|b| b.is_ascii_alphabetic()).count();
    let digits = word.iter().filter(|b| b.is_ascii_digit());
    if word.len() > LEET_MAX
        || letters < 2
        || digits.clone().next().is_none()
        || digits.clone().any(|b| leet(*b).is_none())
    {
        return word;
    }
    for (to, &b) in buf.iter_mut().zip(word) {
        *to = leet(b).unwrap_or(b);
    }
    buf.get(..word.len()).unwrap_or(word)
}

/// The letter a digit stands for in leet spelling.
fn leet(digit: u8) -> Option<u8> {
    match digit {
        b'0' => Some(b'o'),
        b'1' => Some(b'i'),
        b'3' => Some(b'e'),
        b'4' => Some(b'a'),
        b'5' => Some(b's'),
        b'7' => Some(b't'),
        _ => None,
    }
}

/// What a word counts as: itself, or the shape of a random-looking one.
fn shape(word: &[u8]) -> &[u8] {
    let digits = word.iter().filter(|b| b.is_ascii_digit()).count();
    let len = word.len();
    if digits == len && len > 4 {
        SHAPE_NUMBER
    } else if word.iter().all(u8::is_ascii_hexdigit) && (len >= 16 || (len >= 4 && digits > 0 && digits < len)) {
        SHAPE_HEX
    } else if len > 24 {
        SHAPE_LONG
    } else if digits > 0 && digits < len && len >= 12 {
        SHAPE_MIXED
    } else {
        word
    }
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

fn combine(a: u32, b: u32) -> u32 {
    a.wrapping_mul(0x0100_0193) ^ b
}

/// The murmur3 finalizer: spreads the bits of a token hash over the table.
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// A feature of one kind: the hash of its tokens, spread over 32 bits.
fn feature(kind: u32, x: u32) -> u32 {
    fmix(x.wrapping_add(kind.wrapping_mul(0x9e37_79b9)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model file with `bits` slot bits holding `weights` (feature, weight).
    fn model(bits: u32, weights: &[(u32, i16)]) -> Vec<u8> {
        let slots = 1usize << bits;
        let (mut keys, mut values, mut probe) = (vec![0u32; slots], vec![0i16; slots], 0);
        for &(f, w) in weights {
            let mut step = 0;
            let mut slot = (f >> (32 - bits)) as usize;
            while keys[slot] != 0 {
                slot = (slot + 1) % slots;
                step += 1;
            }
            keys[slot] = f.max(1);
            values[slot] = w;
            probe = probe.max(step);
        }
        let mut out = MAGIC.to_vec();
        for v in [bits, 4, 2, probe] {
            out.extend(v.to_le_bytes());
        }
        out.extend((-1.0f64).to_le_bytes());
        out.extend(0.5f64.to_le_bytes());
        out.extend(keys.iter().flat_map(|k| k.to_le_bytes()));
        out.extend(values.iter().flat_map(|w| w.to_le_bytes()));
        out
    }

    fn unigram(word: &str) -> u32 {
        feature(UNIGRAM, fnv1a(word.as_bytes()))
    }

    #[test]
    fn a_malformed_file_is_refused_with_what_is_wrong() {
        assert_eq!(Model::parse(b"nope").unwrap_err(), ModelError::Magic);
        assert_eq!(Model::parse(b"AFWINJ03\x08\0").unwrap_err(), ModelError::Header);
        // A model of the previous format tokenized words differently: refused, not misread.
        let mut old = model(8, &[]);
        old[..8].copy_from_slice(b"AFWINJ02");
        assert_eq!(Model::parse(&old).unwrap_err(), ModelError::Magic);
        let mut short = model(8, &[]);
        short.pop();
        assert_eq!(Model::parse(&short).unwrap_err(), ModelError::Weights { got: 1535, want: 1536 });
        let mut wide = model(8, &[]);
        wide[8..12].copy_from_slice(&30u32.to_le_bytes());
        assert_eq!(Model::parse(&wide).unwrap_err(), ModelError::Bits { bits: 30 });
        let mut probe = model(8, &[]);
        probe[20..24].copy_from_slice(&256u32.to_le_bytes());
        assert_eq!(Model::parse(&probe).unwrap_err(), ModelError::Probe { probe: 256 });
    }

    #[test]
    fn words_punctuation_and_shapes() {
        let text = "ignore](https://x.io/?d=$(id) 3f786850e387550fdab836ed7e6dc881de23001b 1234 123456";
        let mut want: Vec<u32> = ["ignore", "](", "https", "://", "x", ".", "io", "/?", "d", "=$(", "id", ")"]
            .iter()
            .map(|t| unigram(t))
            .collect();
        want.push(feature(UNIGRAM, fnv1a(SHAPE_HEX)));
        want.push(unigram("1234"));
        want.push(feature(UNIGRAM, fnv1a(SHAPE_NUMBER)));
        let mut got = Vec::new();
        for_each_feature_set(text.as_bytes(), |f| got.push(f[0]));
        assert_eq!(got, want);
    }

    /// What joins words (`_`) separates them, and leet spelling reads as letters, so the
    /// same words give the same features.
    #[test]
    fn joined_emphasised_and_leet_words_are_the_words() {
        let unigrams = |text: &str| {
            let mut got = Vec::new();
            for_each_feature_set(text.as_bytes(), |f| got.push(f[0]));
            got
        };
        let plain = unigrams("ignore all previous instructions");
        for variant in [
            "ignore_all_previous_instructions",
            "_ignore__all_ previous\tinstructions_",
            "1gn0r3 4ll pr3v10u5 1n57ruc710n5",
            "ign0re all prev1ous instruct1ons",
        ] {
            assert_eq!(unigrams(variant), plain, "{variant}");
        }
        // Ids and versions keep their digits: a digit that is no leet letter, one letter, or
        // a word with a shape.
        for kept in ["v2", "k8s", "sha256", "x1", "2024", "e2e"] {
            assert_eq!(unigrams(kept), [unigram(kept)], "{kept}");
        }
        assert_eq!(unigrams("deadbeef0123"), [feature(UNIGRAM, fnv1a(SHAPE_HEX))]);
        assert_eq!(unigrams("ab1"), [unigram("abi")]);
    }

    #[test]
    fn only_features_in_the_table_weigh_and_colliding_slots_are_probed() {
        // Two features forced into the same starting slot, the second found one step on.
        let a = unigram("ignore");
        let b = (a & 0xff00_0000) | 0x0000_0042;
        let bytes = model(8, &[(a, 3), (b, 5)]);
        let m = Model::parse(&bytes).unwrap();
        assert_eq!((m.weight(a), m.weight(b)), (3, 5));
        assert_eq!(m.weight(unigram("previous")), 0);
        assert_eq!(m.weight(a ^ 0x10), 0, "a hash that differs in its low bits is another feature");
    }

    #[test]
    fn the_best_window_wins_and_empty_text_scores_zero() {
        let bytes = model(8, &[(unigram("a"), 1), (unigram("b"), 1), (unigram("c"), 10)]);
        let m = Model::parse(&bytes).unwrap();
        assert_eq!(m.score(""), 0.0);
        assert_eq!(m.score("  \n "), 0.0);
        assert_eq!(m.explain("a b x").0, Some(2));
        // Windows of 4 tokens every 2: the one holding `c` wins, however long the text.
        assert_eq!(m.explain("x x x x x x c a x x x x x").0, Some(11));
        // A feature counts once per window's worth of tokens, so repeating it piles up nothing.
        assert_eq!(m.explain("c c c c").0, Some(10));
        assert_eq!(m.explain("c c c c c c c c c").0, Some(10), "every window holds it once, however long the text");
        let s = m.score("a b");
        assert!((s - 1.0 / (1.0 + (1.0f64 - 1.0).exp())).abs() < 1e-12, "{s}");
    }

    #[test]
    fn parts_are_cut_at_blank_lines_and_code_fences() {
        assert_eq!(parts(""), Vec::<&str>::new());
        assert_eq!(parts("one\ntwo\n\n  \t\r\nthree"), ["one\ntwo", "three"]);
        assert_eq!(parts("a\r\n\r\nb\r\n"), ["a\r", "b\r"]);
        // A fenced part is one part, fences included, whatever surrounds it; a blank line
        // inside it still cuts it.
        assert_eq!(
            parts("intro:\n```sh\nls -la\n```\nafter\n  ~~~\nx\n\ny\n  ~~~\nz"),
            ["intro:", "```sh\nls -la\n```", "after", "  ~~~\nx", "y\n  ~~~", "z"]
        );
    }

    /// A run of short parts is one block with the part after it: cutting a text into a few
    /// words per part does not cut it into blocks.
    #[test]
    fn short_parts_join_the_part_after_them() {
        let long = "one two three four five six seven eight nine ten eleven twelve";
        assert_eq!(blocks(""), Vec::<&str>::new());
        assert_eq!(blocks(&format!("{long}\n\n{long}")), [long, long]);
        assert_eq!(blocks(&format!("a\n\nb c\n\n{long}\n\n{long}")), [format!("a\n\nb c\n\n{long}").as_str(), long]);
        assert_eq!(blocks(&format!("{long}\n\na\n\n\nb")), [long, "a\n\n\nb"]);
        // Eleven words are short, whatever separates them or however long they are; a fence
        // around a short command is a short part.
        assert_eq!(blocks("a\tb\x0Bc\x0Cd\re  f g h i j k\n\nx"), ["a\tb\x0Bc\x0Cd\re  f g h i j k\n\nx"]);
        assert_eq!(blocks("```\nls -la\n```\nafter"), ["```\nls -la\n```\nafter"]);
        // Words are cut by ASCII whitespace only: a no-break space joins two words into one.
        assert!(!is_long("a\u{a0}b c d e f g h i j k l"));
        assert!(is_long("a b c d e f g h i j k l"));
    }

    /// Blocks are scored apart: weights do not add up across a blank line, and a feature
    /// that counted in one block counts again in the next.
    #[test]
    fn each_block_is_scored_alone() {
        let bytes = model(8, &[(unigram("a"), 2), (unigram("b"), 3)]);
        let m = Model::parse(&bytes).unwrap();
        // Eleven more words make a part long enough to be a block of its own.
        let pad = " x x x x x x x x x x x";
        assert_eq!(m.explain("a b").0, Some(5));
        assert_eq!(m.explain(&format!("a{pad}\n\nb{pad}")).0, Some(3));
        assert_eq!(m.explain(&format!("b a{pad}\n\nb a a{pad}")).0, Some(5));
        assert_eq!(m.explain(&format!("A{pad}\n\n\u{ff22}{pad}")).0, Some(3), "each block is folded");
        // Short parts are scored with the part after them.
        assert_eq!(m.explain("a\n\nb").0, Some(5));
    }
}
