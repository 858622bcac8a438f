//! Normalization: one folded form of a text for matching (PV1, PV3).
//!
//! Two texts that a person would read as the same fold to the same string: Unicode NFKC
//! (so `ｉｇｎｏｒｅ` and `𝐢𝐠𝐧𝐨𝐫𝐞` become `ignore`), accents dropped (`prévious` is
//! `previous`), lower case, invisible and formatting
//! characters removed, look-alike letters replaced by the ASCII letters they imitate (TR39
//! confusables, so Cyrillic `і` becomes `i`), runs of spaces and tabs collapsed to one space
//! and blank lines dropped. Line breaks are kept because rules and line fingerprints need
//! them. ASCII text, the common case, takes a byte-wise fast path: it is already NFKC and
//! has no look-alikes.

use unicode_normalization::UnicodeNormalization;

mod look_alikes;

/// The folded form of `text`. Idempotent: `fold(&fold(t)) == fold(t)`.
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        return fold_ascii(text.as_bytes(), Case::Lower);
    }
    fold_unicode(text, Case::Lower)
}

/// The folded form of `text` with letters in the case they were written: NFKC, look-alikes
/// replaced by the ASCII letter of the same case they imitate (Cyrillic `А` by `A`, `а` by
/// `a`), invisibles removed, whitespace collapsed. What case-sensitive patterns (tokens,
/// keys) are matched on, so that a fullwidth or look-alike spelling of a token is the token.
pub fn fold_keeping_case(text: &str) -> String {
    if text.is_ascii() {
        return fold_ascii(text.as_bytes(), Case::Keep);
    }
    fold_unicode(text, Case::Keep)
}

/// Whether folding lower-cases letters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Lower,
    Keep,
}

fn fold_unicode(text: &str, case: Case) -> String {
    let (mut folded, mut again) = fold_pass(text, case);
    // A look-alike replaced by its ASCII letter may now compose with a following accent
    // (Cyrillic `і` + U+0301 becomes `i` + U+0301), so may a lower-cased letter (`H` +
    // U+0331 has no composed form, `h` + U+0331 has), and a letter and an accent that a
    // dropped character kept apart (`i`, NUL, U+0330; two Hangul jamo), and lower-casing may expand a
    // letter into a letter and a mark out of canonical order (`İ` + U+0317): fold the
    // result again, which normalizes it, so that folding folded text changes nothing. One
    // more pass settles every case seen; the bound keeps hostile input linear.
    for _ in 0..3 {
        if !again {
            break;
        }
        (folded, again) = fold_pass(&folded, case);
    }
    folded
}

/// One pass of NFKC without accents, lower case, look-alikes, invisibles and whitespace;
/// and whether the result must be normalized again.
fn fold_pass(text: &str, case: Case) -> (String, bool) {
    let mut out = Folder::with_capacity(text.len(), case);
    // NFKC is NFC of NFKD: decomposing first puts every accent on its own, to be dropped.
    for c in text.nfkd().filter(|&c| !is_accent(c)).nfc() {
        if c.is_ascii() {
            let lower = if case == Case::Lower { c.to_ascii_lowercase() } else { c };
            out.push(lower);
            out.changed = lower != c;
        } else {
            fold_non_ascii(c, &mut out);
        }
    }
    let again = out.recompose;
    (out.finish(), again)
}

/// The fast path: ASCII is already NFKC and has no look-alikes, so folding is one pass
/// over bytes with the same whitespace and control rules as [`Folder`].
///
/// Most of ordinary text folds to itself lower-cased: words of printable bytes with single
/// spaces between them. Such a run is found with one cheap test per byte and copied in one
/// go (a loop the compiler widens); only the bytes between runs (line breaks, indentation,
/// controls) are folded one at a time.
fn fold_ascii(bytes: &[u8], case: Case) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    // What is owed before the next visible byte: nothing, a space or a line break.
    let mut owed = 0u8;
    let mut rest = bytes;
    while !rest.is_empty() {
        let run = plain_run(rest);
        let (now, later) = rest.split_at(run.max(1));
        if run == 0 {
            fold_bytes(now, &mut out, &mut owed, case);
        } else {
            if owed != 0 && !out.is_empty() {
                out.push(owed);
            }
            owed = 0;
            match case {
                Case::Lower => out.extend(now.iter().map(u8::to_ascii_lowercase)),
                Case::Keep => out.extend_from_slice(now),
            }
        }
        rest = later;
    }
    // Only ASCII bytes were pushed, so this never fails; the fallback keeps the core free
    // of panics all the same.
    String::from_utf8(out).unwrap_or_default()
}

/// Bytes per block of [`plain_run`].
const BLOCK: usize = 16;

/// Whether `block` is printable bytes and spaces, with no two spaces together and no space
/// at its end: what folding leaves as it is, but for case.
fn folds_to_itself(block: &[u8]) -> bool {
    let printable = block.iter().fold(true, |ok, &b| ok & (b' '..=b'~').contains(&b));
    let single = block.iter().zip(block.iter().skip(1)).fold(true, |ok, (&a, &b)| ok & !(a == b' ' && b == b' '));
    printable && single && block.last().is_some_and(|&b| b != b' ')
}

/// How many bytes at the start of `bytes` fold to themselves but for case: visible bytes,
/// with single spaces only between two of them.
fn plain_run(bytes: &[u8]) -> usize {
    let visible = |b: u8| b > b' ' && b < 0x7F;
    // Whole blocks first, each tested in one widened loop; a block ends on a visible byte,
    // so the next one may start with a space.
    let mut n = bytes
        .chunks_exact(BLOCK)
        .enumerate()
        .take_while(|(i, block)| folds_to_itself(block) && (*i > 0 || block.first().is_some_and(|&b| visible(b))))
        .count()
        * BLOCK;
    while let Some(&b) = bytes.get(n) {
        if visible(b) {
            n += 1;
        } else if b == b' ' && n > 0 && bytes.get(n + 1).is_some_and(|&next| visible(next)) {
            n += 2;
        } else {
            break;
        }
    }
    n
}

/// Folds `bytes` one at a time, carrying what is owed before the next visible byte.
fn fold_bytes(bytes: &[u8], out: &mut Vec<u8>, owed: &mut u8, case: Case) {
    for &b in bytes {
        match ascii_class(b) {
            VISIBLE => {
                if *owed != 0 && !out.is_empty() {
                    out.push(*owed);
                }
                *owed = 0;
                out.push(if case == Case::Lower { b.to_ascii_lowercase() } else { b });
            }
            SPACE if *owed == 0 => *owed = b' ',
            BREAK => *owed = b'\n',
            _ => {}
        }
    }
}

const VISIBLE: u8 = 0;
const SPACE: u8 = 1;
const BREAK: u8 = 2;
const DROP: u8 = 3;

/// How [`fold_ascii`] treats each byte: LF, CR, VT and FF break lines, space and tab are
/// spaces, the other controls are dropped.
const fn ascii_class(b: u8) -> u8 {
    match b {
        b'\n' | b'\r' | 0x0B | 0x0C => BREAK,
        b' ' | b'\t' => SPACE,
        0..=0x1F | 0x7F.. => DROP,
        _ => VISIBLE,
    }
}

/// Lower case, then the ASCII letters a look-alike imitates, else the lower-cased letter.
fn fold_non_ascii(c: char, out: &mut Folder) {
    if is_invisible(c) {
        out.dropped = true;
        return;
    }
    let (mut lowered, mut kept) = (c.to_lowercase(), core::iter::once(c));
    let lowered: &mut dyn ExactSizeIterator<Item = char> = match out.case {
        Case::Lower => &mut lowered,
        Case::Keep => &mut kept,
    };
    // `İ` lower-cases to `i` + U+0307, which a following mark may have to be reordered with.
    out.recompose |= lowered.len() > 1;
    for lower in lowered {
        let folded = if lower.is_ascii() || !may_imitate_ascii(lower) { lower } else { look_alike(lower, out.case) };
        out.push(folded);
        out.changed = folded != c;
    }
}

/// The ASCII letter or digit `c` imitates (lower-cased unless `case` keeps it), or `c`
/// itself: the TR39 skeleton of `c` when that is one ASCII letter or digit.
fn look_alike(c: char, case: Case) -> char {
    match look_alikes::ascii_look_alike(c).or_else(|| look_alikes::small_capital(c)) {
        Some(a) if case == Case::Keep => char::from(a),
        Some(a) => char::from(a.to_ascii_lowercase()),
        None => c,
    }
}

/// Could `c` be a look-alike of an ASCII letter or digit? Letters of the alphabetic
/// scripts (Latin, Greek, Cyrillic, Armenian, Cherokee…) and letter-like symbols can; CJK,
/// Hangul, emoji and the other large blocks that make up most non-ASCII text cannot, and
/// skipping the TR39 lookup for them keeps mixed text fast. Fullwidth and mathematical
/// letters are already ASCII after NFKC.
fn may_imitate_ascii(c: char) -> bool {
    matches!(c, '\u{80}'..='\u{2E7F}' | '\u{A640}'..='\u{ABFF}' | '\u{10400}'..='\u{104FF}')
}

/// Builds folded text one character at a time, collapsing whitespace and dropping control
/// characters as it goes.
struct Folder {
    text: String,
    /// A space is owed before the next visible character on this line.
    space: bool,
    /// A line break is owed before the next visible character.
    newline: bool,
    /// The last character pushed is not the one NFKC gave (it was lower-cased, or a
    /// look-alike replaced), so a combining mark after it may now compose with it.
    changed: bool,
    /// The last character seen was dropped (an invisible or a control), so whatever came
    /// before it now meets whatever comes after it.
    dropped: bool,
    /// The text must be normalized again: a combining mark follows a changed character, a
    /// character that is not ASCII follows a dropped one, or lower-casing expanded a letter.
    recompose: bool,
    case: Case,
}

impl Folder {
    fn with_capacity(n: usize, case: Case) -> Self {
        Self {
            text: String::with_capacity(n),
            space: false,
            newline: false,
            changed: false,
            dropped: false,
            recompose: false,
            case,
        }
    }

    fn push(&mut self, c: char) {
        // What a dropped character kept apart may compose: a letter and an accent, or two
        // Hangul jamo (`셰`, NUL, `ᆪ` becomes `셳`).
        self.recompose |=
            (self.changed && unicode_normalization::char::is_combining_mark(c)) || (self.dropped && !c.is_ascii());
        self.changed = false;
        self.dropped = false;
        if is_line_break(c) {
            self.space = false;
            self.newline = !self.text.is_empty();
        } else if c.is_whitespace() {
            self.space = !self.text.is_empty() && !self.newline;
        } else if c.is_control() {
            // Dropped: NUL, escape sequences and the like carry no meaning to a reader.
            self.dropped = true;
        } else {
            if self.newline {
                self.text.push('\n');
            } else if self.space {
                self.text.push(' ');
            }
            self.space = false;
            self.newline = false;
            self.text.push(c);
        }
    }

    fn finish(self) -> String {
        self.text
    }
}

/// The combining marks that accent letters of any script (the Combining Diacritical Marks
/// blocks: acute, grave, diaeresis, cedilla, ring, the stacked marks of "zalgo" text…),
/// which a reader looks through: `prévious` is read as `previous`. Marks that are letters
/// of their script (Devanagari vowel signs, Hebrew and Arabic points are in other blocks)
/// are kept. Dropped before anything else looks at them, so a pile of them ("zalgo" text,
/// the most costly text to fold) costs no lower-case or look-alike lookups.
fn is_accent(c: char) -> bool {
    matches!(c, '\u{300}'..='\u{36F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// Characters that end a line for a reader: LF, CR, VT, FF, NEL and the Unicode line and
/// paragraph separators.
pub fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Characters that render as nothing or change how neighbouring text is shown: the Unicode
/// Default_Ignorable_Code_Point set (zero-width spaces and joiners, bidi embeddings,
/// overrides and isolates, soft hyphen, variation selectors, tag characters, Hangul fillers)
/// and the other format characters that hide or reorder text (Arabic number signs,
/// interlinear annotation, Egyptian hieroglyph format controls).
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{AD}' | '\u{34F}' | '\u{61C}' | '\u{115F}'..='\u{1160}' | '\u{17B4}'..='\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}'
        | '\u{600}'..='\u{605}' | '\u{6DD}' | '\u{70F}' | '\u{890}'..='\u{891}' | '\u{8E2}'
        | '\u{110BD}' | '\u{110CD}' | '\u{13430}'..='\u{1343F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_and_wide_letters_fold_to_ascii() {
        assert_eq!(fold("\u{456}gnore"), "ignore");
        assert_eq!(fold("ｉｇｎｏｒｅ"), "ignore");
        assert_eq!(fold("\u{406}GNORE previous"), "ignore previous");
        assert_eq!(fold("𝐢𝐠𝐧𝐨𝐫𝐞"), "ignore");
        assert_eq!(fold("\u{3bf}k"), "ok");
    }

    #[test]
    fn invisible_and_control_characters_vanish() {
        assert_eq!(fold("ig\u{200B}no\u{200D}re\u{FEFF}"), "ignore");
        assert_eq!(fold("a\u{202E}b\u{2066}c"), "abc");
        assert_eq!(fold("nul\0here\u{1b}[31m"), "nulhere[31m");
    }

    #[test]
    fn whitespace_folds_and_lines_survive() {
        assert_eq!(fold("  Hello \t  World  \r\n\n\n  next\u{2028}line "), "hello world\nnext\nline");
        assert_eq!(fold("a\u{A0}\u{3000}b"), "a b");
        assert_eq!(fold(""), "");
        assert_eq!(fold(" \n\t "), "");
    }

    /// The block-at-a-time ASCII path folds exactly as one byte at a time would.
    #[test]
    fn the_ascii_path_agrees_with_folding_byte_by_byte() {
        fn by_byte(bytes: &[u8]) -> String {
            let (mut out, mut owed) = (String::new(), None);
            for &b in bytes {
                match ascii_class(b) {
                    VISIBLE => {
                        if let Some(c) = owed.take().filter(|_| !out.is_empty()) {
                            out.push(c);
                        }
                        out.push(char::from(b.to_ascii_lowercase()));
                    }
                    SPACE if owed.is_none() => owed = Some(' '),
                    BREAK => owed = Some('\n'),
                    _ => {}
                }
            }
            out
        }
        let alphabet = [b'a', b'B', b' ', b'\t', b'\n', b'\r', 0x01, 0x0C];
        let mut text = Vec::new();
        for n in 0..=5u32 {
            for mut i in 0..alphabet.len().pow(n) {
                text.clear();
                for _ in 0..n {
                    text.push(alphabet[i % alphabet.len()]);
                    i /= alphabet.len();
                }
                assert_eq!(fold_ascii(&text, Case::Lower), by_byte(&text), "{text:?}");
            }
        }
        // Longer texts, mostly words and single spaces as real text is, so that whole
        // blocks are copied and every kind of block boundary occurs.
        let mut state = 7u64;
        for len in 0..3000 {
            text.clear();
            for _ in 0..len % 97 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let pick = (state >> 33) as usize;
                text.push(if pick.is_multiple_of(4) {
                    alphabet[pick / 4 % alphabet.len()]
                } else {
                    b'a' + (pick % 26) as u8
                });
            }
            assert_eq!(fold_ascii(&text, Case::Lower), by_byte(&text), "{text:?}");
        }
    }

    /// The case-keeping fold is the fold but for case: tokens are case-sensitive.
    #[test]
    fn folding_may_keep_case() {
        assert_eq!(fold_keeping_case("ｇｈｐ＿ＡｂＣ１"), "ghp_AbC1");
        assert_eq!(fold_keeping_case("\u{410}\u{412}\u{421} \u{430}\u{435}\u{43e}"), "ABC aeo");
        assert_eq!(fold_keeping_case("sk-\u{200B}Ab\u{FEFF}Cd  \t x\n\n y"), "sk-AbCd x\ny");
        assert_eq!(fold_keeping_case("AbC  dEf"), "AbC dEf");
        // Not for every letter: upper-case Σ imitates no ASCII letter, lower-case σ imitates `o`.
        for t in ["Ｈｅｌｌｏ\u{200B} Wörld", "ǅ ﬁ ẞ σς", "\u{456}\u{301}x\u{2029}y", "i\0\u{330}pp\u{5}", "AbC\tdEf  "]
        {
            assert_eq!(fold_keeping_case(t).to_lowercase(), fold(t).to_lowercase(), "{t:?}");
        }
    }

    /// An accent does not make another word for a reader, so it does not for a rule: an
    /// injection with an accent on every word is the injection.
    #[test]
    fn accents_are_dropped() {
        assert_eq!(fold("Café Ünïcode"), "cafe unicode");
        assert_eq!(fold("Ignore all pr\u{e9}vious instructions"), "ignore all previous instructions");
        assert_eq!(fold("pre\u{301}vious ı̈gnøre"), "previous ignøre");
        assert_eq!(fold_keeping_case("Ŝk-ÀbÇ"), "Sk-AbC");
        assert_eq!(fold("Iɢɴᴏʀᴇ ᴀʟʟ ᴘʀᴇᴠɪᴏᴜꜱ ɪɴꜱᴛʀᴜᴄᴛɪᴏɴꜱ"), "ignore all previous instructions");
        // Stacked marks ("zalgo" text) vanish however many there are.
        assert_eq!(fold("i\u{336}\u{34C}\u{352}g\u{1DC4}n\u{20D7}o\u{FE20}r\u{1AB0}e"), "ignore");
        // Marks that are letters of their script stay: a Devanagari vowel sign, Hebrew points.
        assert_eq!(fold("\u{915}\u{93F}"), "\u{915}\u{93F}");
        assert_eq!(fold("\u{5E9}\u{5C1}"), "\u{5E9}\u{5C1}");
    }

    /// Every character of the Basic Multilingual Plane and of the letter-like blocks above it
    /// (mathematical alphanumerics, enclosed alphanumerics), alone and after a letter with an
    /// accent on it: dropping accents must not leave anything the next fold would change.
    #[test]
    fn fold_is_idempotent_on_every_letter_like_character() {
        let planes = (0..=0xFFFF).chain(0x1D400..=0x1D7FF).chain(0x1F100..=0x1F1FF);
        for c in planes.filter_map(char::from_u32) {
            for t in [c.to_string(), format!("E{c}\u{301}")] {
                let once = fold(&t);
                assert_eq!(fold(&once), once, "{t:?}");
                let kept = fold_keeping_case(&t);
                assert_eq!(fold_keeping_case(&kept), kept, "{t:?}");
            }
        }
    }

    #[test]
    fn fold_is_idempotent_on_mixed_text() {
        // The last five were found by the `normalize` fuzz target: a dropped NUL or zero-width
        // space between a letter and a combining mark, a lower-casing that expands, controls
        // between Hangul jamo, and a lower-cased letter that then composes.
        for t in [
            "Ｈｅｌｌｏ\u{200B} Wörld",
            "ǅ ﬁ ẞ Σσς",
            "\u{456}\u{301}x\u{2029}y",
            "i\0\u{330}pp\u{5}",
            "e\u{200B}\u{301}",
        ] {
            let once = fold(t);
            assert_eq!(fold(&once), once, "{t:?}");
        }
    }
}
