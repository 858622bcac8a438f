//! A pattern's regex, compiled lazily in the forms its searches need, so that the pack
//! holds little more than the automata the texts it judged called for.
//!
//! The regex crate's full engine is built for searching anywhere in a long text: a lazy
//! DFA forwards and another backwards (to find where a match starts), each with its own
//! NFA and cache. Most searches of a pattern are not of that kind: the prefilter already
//! knows where a match would start ([`Search`](super::search)), and a search anchored there
//! reads a few bytes. So each pattern has two forms:
//!
//! - **near**: anchored searches from one place, over at most the pattern's longest match.
//!   The forward NFA alone, run by a bounded backtracker (or, for a long window, the
//!   PikeVM): no DFA, no reverse NFA, no prefilter. Linear in the window either way.
//! - **whole**: a search of the rest of a text: the full engine.
//!
//! And each form in two alphabets. Unicode classes (`\w`, `\s`, `[^…]`, `(?i)`) compile to
//! large automata, up to hundreds of KiB for one pattern, yet on a text that is all ASCII
//! they match exactly what their ASCII forms match: every character they add is outside
//! ASCII, and `\b` sees only ASCII neighbours. So an ASCII text is searched with the
//! pattern compiled without Unicode, and the Unicode form is built only for the texts that
//! need it. A pattern that cannot be written without Unicode (`\p{L}`) has no ASCII form and
//! is searched with its Unicode one.

use std::sync::OnceLock;

use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;

/// Compiled regexes are capped so a hostile or careless pattern cannot eat memory.
pub(crate) const REGEX_SIZE_LIMIT: usize = 4 << 20;

/// Which search a regex is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Search {
    /// Anchored at one place, over a window no longer than the longest match.
    Near,
    /// Anywhere in the rest of a text.
    Whole,
}

/// The text a search reads: whether it is all ASCII decides the alphabet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Alphabet {
    Ascii,
    #[default]
    Unicode,
}

impl Alphabet {
    /// The alphabet a search of `text` may use.
    pub(crate) fn of(text: &str) -> Self {
        if text.is_ascii() { Self::Ascii } else { Self::Unicode }
    }
}

/// One pattern's regex in every form, each compiled the first time it is needed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Matcher {
    /// By [`Matcher::slot`]; `None` where the form could not be compiled.
    forms: [OnceLock<Option<Regex>>; 4],
}

impl Matcher {
    /// The regexes `srcs`, as one, compiled for `search` over a text in `alphabet`, capturing groups
    /// only if `captures`. `None` only if its Unicode form compiles to more than the size
    /// limit, which loading rules out.
    pub(crate) fn get(&self, srcs: &[&str], search: Search, alphabet: Alphabet, captures: bool) -> Option<&Regex> {
        if alphabet == Alphabet::Ascii
            && let Some(ascii) = self.form(srcs, search, Alphabet::Ascii, captures)
        {
            return Some(ascii);
        }
        self.form(srcs, search, Alphabet::Unicode, captures)
    }

    fn form(&self, srcs: &[&str], search: Search, alphabet: Alphabet, captures: bool) -> Option<&Regex> {
        let slot = usize::from(search == Search::Whole) * 2 + usize::from(alphabet == Alphabet::Unicode);
        self.forms.get(slot)?.get_or_init(|| compile_many(srcs, search, alphabet, captures).ok()).as_ref()
    }
}

/// Compiles several regexes as one, which matches a text exactly where one of them does:
/// for `search` over a text in `alphabet`, with every capturing group if `captures`, else
/// only the match.
pub(crate) fn compile_many(
    srcs: &[&str],
    search: Search,
    alphabet: Alphabet,
    captures: bool,
) -> Result<Regex, regex::Error> {
    let which = if captures { WhichCaptures::All } else { WhichCaptures::Implicit };
    // No one-pass DFA in either form: it costs memory and helps only long captures.
    let config = meta::Config::new().nfa_size_limit(Some(REGEX_SIZE_LIMIT)).onepass(false).which_captures(which);
    let config = match search {
        Search::Near => config.hybrid(false).dfa(false).auto_prefilter(false),
        Search::Whole => config,
    };
    let unicode = alphabet == Alphabet::Unicode;
    meta::Builder::new()
        .configure(config)
        .syntax(syntax::Config::new().unicode(unicode).utf8(unicode))
        .build_many(srcs)
        .map_err(|e| match (e.size_limit(), e.syntax_error()) {
            (Some(limit), _) => regex::Error::CompiledTooBig(limit),
            (None, Some(syntax)) => regex::Error::Syntax(syntax.to_string()),
            (None, None) => regex::Error::Syntax(e.to_string()),
        })
}
