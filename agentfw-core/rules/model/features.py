"""The injection model's blocks, features and score, exactly as
agentfw-core/src/signals/injection.rs computes them. Standard library only, so the vector
check runs anywhere.

A text is cut into blocks (`blocks`), each block is folded (agentfw_core::normalize::fold,
which the trainer runs through Rust), and the model scores the folded blocks: the text's
score is the best window of any block.
"""

import math
import struct

MAGIC = b"AFWINJ03"
HEADER = struct.Struct("<8sIIIIdd")
PUNCT_BYTES = 4
PREFIX = 5
SHAPE_NUMBER = b"\x01num"
SHAPE_HEX = b"\x01hex"
SHAPE_LONG = b"\x01long"
SHAPE_MIXED = b"\x01mix"
UNIGRAM, BIGRAM, TRIGRAM, WORD_PREFIX = 1, 2, 3, 4
M32 = 0xFFFFFFFF
HEX = frozenset(b"0123456789abcdefABCDEF")
DIGITS = frozenset(b"0123456789")


# What a blank line may hold besides nothing.
BLANK = " \t\r\x0b\x0c"


# A part of a text with fewer words than this is not scored alone: it joins the parts after it.
SHORT_WORDS = 12
# What separates words when counting them (ASCII whitespace, as the Rust scorer counts).
SPACE = " \t\n\r\x0b\x0c"


def blocks(text):
    """The blocks of `text` scored apart, in order: runs of lines between blank lines and
    code fences (a line starting with ``` or ~~~ after indentation); a fenced block, fences
    included, is one part. A run of parts of fewer than SHORT_WORDS words each is one block
    with the part after it, so that cutting a text into a few words per part does not cut
    what it says. Lines end at \\n."""
    return [text[s:e] for s, e in block_spans(text)]


def block_spans(text):
    """Where each block of `text` starts and ends (character offsets): the parts of `text`
    (`part_spans`), a run of short ones joined with the part after it."""
    out, first = [], None
    for s, e in part_spans(text):
        if first is None:
            first = s
        if is_long(text[s:e]):
            out.append((first, e))
            first = None
    if first is not None:
        out.append((first, e))
    return out


def is_long(part):
    """Whether `part` has at least SHORT_WORDS words (runs of anything but ASCII whitespace)."""
    words, inside = 0, False
    for c in part:
        if c in SPACE:
            inside = False
        elif not inside:
            inside, words = True, words + 1
            if words >= SHORT_WORDS:
                return True
    return False


def part_spans(text):
    """Where each part of `text` starts and ends (character offsets): a part is a run of
    whole lines between blank lines and fences, so it is the text between them."""
    out, first, last, fenced, at = [], None, None, False, 0

    def close():
        nonlocal first
        if first is not None:
            out.append((first, last))
            first = None

    for line in text.split("\n"):
        start, at = at, at + len(line) + 1
        visible = line.strip(BLANK)
        if not visible:
            close()
            continue
        fence = visible.startswith(("```", "~~~"))
        if fence and not fenced:
            close()
        if first is None:
            first = start
        last = start + len(line)
        if fence and fenced:
            close()
        fenced ^= fence
    close()
    return out


def is_separator(b):
    return b <= 0x20 or b == 0x7F or b == 0x5F


def is_word(b):
    return (48 <= b <= 57) or (65 <= b <= 90) or (97 <= b <= 122) or b >= 0x80


LEET_MAX = 24
LEET = {ord("0"): ord("o"), ord("1"): ord("i"), ord("3"): ord("e"), ord("4"): ord("a"), ord("5"): ord("s"),
        ord("7"): ord("t")}


def unleet(word):
    """`word` with leet digits read as letters, if it has at least two letters and every digit is one."""
    letters = sum(1 for b in word if (65 <= b <= 90) or (97 <= b <= 122))
    digits = [b for b in word if b in DIGITS]
    if len(word) > LEET_MAX or letters < 2 or not digits or any(b not in LEET for b in digits):
        return word
    return bytes(LEET.get(b, b) for b in word)


def shape(word):
    digits = sum(1 for b in word if b in DIGITS)
    n = len(word)
    if digits == n and n > 4:
        return SHAPE_NUMBER
    if all(b in HEX for b in word) and (n >= 16 or (n >= 4 and 0 < digits < n)):
        return SHAPE_HEX
    if n > 24:
        return SHAPE_LONG
    if 0 < digits < n and n >= 12:
        return SHAPE_MIXED
    return word


def fnv1a(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & M32
    return h


def combine(a, b):
    return ((a * 0x01000193) & M32) ^ b


def fmix(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def feature(kind, x):
    return fmix((x + kind * 0x9E3779B9) & M32)


def tokens(text):
    """The byte strings the model hashes, and the word prefix (or None), per token."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    out = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if is_separator(b):
            i += 1
            continue
        word = is_word(b)
        j = i
        while j < n and not is_separator(data[j]) and is_word(data[j]) == word:
            j += 1
        run = data[i:j]
        i = j
        if word:
            s = shape(run)
            w = s if s in (SHAPE_HEX, SHAPE_NUMBER) else shape(unleet(run))
            out.append((w, w[:PREFIX] if w[:1] != b"\x01" and len(w) > PREFIX else None))
        else:
            out.append((run[:PUNCT_BYTES], None))
    return out


def features(text):
    """The features (32-bit hashes) of each token, as the Rust `Model::features` gives them."""
    t1 = t2 = 0
    out = []
    for data, prefix in tokens(text):
        t = fnv1a(data)
        f = [feature(UNIGRAM, t), feature(BIGRAM, combine(t1, t)), feature(TRIGRAM, combine(combine(t2, t1), t))]
        if prefix is not None:
            f.append(feature(WORD_PREFIX, fnv1a(prefix)))
        out.append(f)
        t2, t1 = t1, t
    return out


RECENT = 1024


def counted(per_token, window):
    """The features that count at each token: those that did not count within the last
    `window` tokens, remembered in a direct-mapped table of RECENT slots (as in Rust)."""
    keys, at = [0] * RECENT, [0] * RECENT
    out = []
    for n, fs in enumerate(per_token):
        kept = []
        for f in fs:
            key, slot = max(f, 1), f % RECENT
            if keys[slot] == key and n - at[slot] < window:
                continue
            keys[slot], at[slot] = key, n
            kept.append(f)
        out.append(kept)
    return out


def windows(n, window, stride):
    """(start, end) of each window scored over n tokens."""
    if n == 0:
        return []
    if n <= window:
        return [(0, n)]
    out = [(s, s + window) for s in range(0, n - window + 1, stride)]
    if out[-1][0] != n - window:
        out.append((n - window, n))
    return out


class Model:
    """A model file: a table of (feature, weight) with open addressing, as in Rust."""

    def __init__(self, data):
        magic, self.bits, self.window, self.stride, self.probe, self.intercept, self.scale = HEADER.unpack_from(data)
        if magic != MAGIC:
            raise ValueError("not an injection model")
        slots = 1 << self.bits
        keys = struct.unpack_from(f"<{slots}I", data, HEADER.size)
        values = struct.unpack_from(f"<{slots}h", data, HEADER.size + 4 * slots)
        self.weights = {k: w for k, w in zip(keys, values) if k != 0}

    @staticmethod
    def dump(window, stride, intercept, scale, weights):
        """A model file holding `weights` ({feature: weight}) in a table at most 60% full."""
        bits = 8
        while (1 << bits) * 3 < len(weights) * 5:  # at most 60% full
            bits += 1
        slots = 1 << bits
        keys, values, probe = [0] * slots, [0] * slots, 0
        for f in sorted(weights):
            slot, step = f >> (32 - bits), 0
            while keys[slot] != 0:
                slot, step = (slot + 1) % slots, step + 1
            keys[slot], values[slot] = max(f, 1), weights[f]
            probe = max(probe, step)
        return (HEADER.pack(MAGIC, bits, window, stride, probe, intercept, scale)
                + struct.pack(f"<{slots}I", *keys) + struct.pack(f"<{slots}h", *values))

    def weight(self, f):
        return self.weights.get(max(f, 1), 0)

    def best_window(self, text):
        """The best window's weight sum of one folded block (None: no tokens)."""
        per_token = [sum(self.weight(i) for i in f) for f in counted(features(text), self.window)]
        spans = windows(len(per_token), self.window, self.stride)
        if not spans:
            return None
        prefix = [0]
        for c in per_token:
            prefix.append(prefix[-1] + c)
        return max(prefix[e] - prefix[s] for s, e in spans)

    def logistic(self, total):
        z = self.intercept + self.scale * total
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)  # the same number as Rust's 1 / (1 + exp(-z)), without overflow
        return e / (1.0 + e)

    def best(self, folded_blocks):
        """The best window's weight sum over the folded blocks of a text (None: no tokens)."""
        sums = [s for s in (self.best_window(b) for b in folded_blocks) if s is not None]
        return max(sums) if sums else None

    def score(self, folded_blocks):
        best = self.best(folded_blocks)
        return 0.0 if best is None else self.logistic(best)
