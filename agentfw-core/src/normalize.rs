//! Normalization: one folded form of a text for matching (PV1, PV3).
//!
//! Two texts that a person would read as the same fold to the same string: Unicode NFKC
//! (so `ｉｇｎｏｒｅ` and `𝐢𝐠𝐧𝐨𝐫𝐞` become `ignore`), lower case, invisible and formatting
//! characters removed, look-alike letters replaced by the ASCII letters they imitate (TR39
//! confusables, so Cyrillic `і` becomes `i`), runs of spaces and tabs collapsed to one space
//! and blank lines dropped. Line breaks are kept because rules and line fingerprints need
//! them. ASCII text, the common case, takes a byte-wise fast path: it is already NFKC and
//! has no look-alikes.

use unicode_normalization::UnicodeNormalization;

/// The folded form of `text`. Idempotent: `fold(&fold(t)) == fold(t)`.
pub fn fold(text: &str) -> String {
    let mut out = Folder::with_capacity(text.len());
    if text.is_ascii() {
        for &b in text.as_bytes() {
            out.push(char::from(b.to_ascii_lowercase()));
        }
        return out.finish();
    }
    for c in text.nfkc() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else {
            fold_non_ascii(c, &mut out);
        }
    }
    let folded = out.finish();
    if folded.is_ascii() {
        return folded;
    }
    // A look-alike replaced by its ASCII letter may now compose with a following accent
    // (Cyrillic `і` + U+0301 becomes `i` + U+0301): normalize once more so that folding
    // folded text changes nothing.
    folded.nfkc().collect()
}

/// Lower case, then the ASCII letters a look-alike imitates, else the lower-cased letter.
fn fold_non_ascii(c: char, out: &mut Folder) {
    if is_invisible(c) {
        return;
    }
    for lower in c.to_lowercase() {
        if lower.is_ascii() {
            out.push(lower);
            continue;
        }
        let mut buf = [0u8; 4];
        let mut skeleton = unicode_security::skeleton(lower.encode_utf8(&mut buf));
        match (skeleton.next(), skeleton.next()) {
            (Some(a), None) if a.is_ascii_alphanumeric() => out.push(a.to_ascii_lowercase()),
            _ => out.push(lower),
        }
    }
}

/// Builds folded text one character at a time, collapsing whitespace and dropping control
/// characters as it goes.
struct Folder {
    text: String,
    /// A space is owed before the next visible character on this line.
    space: bool,
    /// A line break is owed before the next visible character.
    newline: bool,
}

impl Folder {
    fn with_capacity(n: usize) -> Self {
        Self { text: String::with_capacity(n), space: false, newline: false }
    }

    fn push(&mut self, c: char) {
        if is_line_break(c) {
            self.space = false;
            self.newline = !self.text.is_empty();
        } else if c.is_whitespace() {
            self.space = !self.text.is_empty() && !self.newline;
        } else if c.is_control() {
            // Dropped: NUL, escape sequences and the like carry no meaning to a reader.
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

    #[test]
    fn accented_letters_are_kept_not_stripped() {
        assert_eq!(fold("Café Ünïcode"), "café ünïcode");
    }

    #[test]
    fn fold_is_idempotent_on_mixed_text() {
        for t in ["Ｈｅｌｌｏ\u{200B} Wörld", "ǅ ﬁ ẞ Σσς", "\u{456}\u{301}x\u{2029}y"] {
            let once = fold(t);
            assert_eq!(fold(&once), once, "{t:?}");
        }
    }
}
