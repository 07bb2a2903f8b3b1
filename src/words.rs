//! The words of source text: maximal runs of identifier bytes, found 64 bytes at a time.
//!
//! The scan's chunker and the verdicts' site index both split whole files into words, and a
//! branch on every byte of a site costs more than the lookups the words feed (mispredicted at
//! every word's end). Here each 64-byte block becomes a mask of its word bytes without a branch
//! (16 bytes per SSE2 step on x86-64, a table elsewhere), and each run of ones is a word; a
//! run that reaches the block's end goes on into the next block.

/// Which bytes make up words: ASCII letters, digits, `_`, and any non-ASCII byte (a UTF-8
/// identifier's bytes are all non-ASCII past its ASCII ones).
static WORD_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
        b += 1;
    }
    table
};

/// Whether the byte can be part of an identifier (`WORD_BYTES`).
pub fn is_word_byte(b: u8) -> bool {
    WORD_BYTES[b as usize]
}

/// Bit `i` set where `block[i]` (at most 64 bytes) is a word byte; with `NON_ASCII` false,
/// only ASCII letters, digits and `_` count.
fn word_mask<const NON_ASCII: bool>(block: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Ok(block) = <&[u8; 64]>::try_from(block) {
        return word_mask_sse2::<NON_ASCII>(block);
    }
    let mut mask = 0u64;
    for (i, &b) in block.iter().enumerate() {
        let word = WORD_BYTES[b as usize] && (NON_ASCII || b < 0x80);
        mask |= (word as u64) << i;
    }
    mask
}

/// `word_mask` of a whole block, 16 bytes per step (SSE2 is part of every x86-64): a byte is
/// a word byte when its top bit is set (if `NON_ASCII`), when it lies in `a..=z` with bit 5
/// set, in `0..=9`, or is `_`.
#[cfg(target_arch = "x86_64")]
fn word_mask_sse2<const NON_ASCII: bool>(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::*;
    let mut mask = 0u64;
    for (step, chunk) in block.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of the x86-64 baseline, so these are always available; the
        // load reads `chunk`'s 16 bytes and takes any alignment.
        let word = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            // Unsigned `x <= limit`, as `min(x, limit) == x`.
            let at_most = |x: __m128i, limit: u8| {
                _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(limit as i8)), x)
            };
            // A non-ASCII byte matches none of these three: `(v | 0x20) - b'a'` and
            // `v - b'0'` stay above 25 and 9 for any byte from 0x80.
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let letter = at_most(_mm_sub_epi8(lower, _mm_set1_epi8(b'a' as i8)), 25);
            let digit = at_most(_mm_sub_epi8(v, _mm_set1_epi8(b'0' as i8)), 9);
            let underscore = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'_' as i8));
            let ascii = _mm_or_si128(_mm_or_si128(letter, digit), underscore);
            // The top bit of each byte: set for non-ASCII bytes, and for the matches above.
            _mm_movemask_epi8(if NON_ASCII {
                _mm_or_si128(ascii, v)
            } else {
                ascii
            })
        };
        mask |= (word as u16 as u64) << (16 * step);
    }
    mask
}

/// The maximal runs of word bytes (`is_word_byte`) in a text, as (start, end), in order.
pub fn word_runs(text: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    Runs::<true>::new(text)
}

/// The words themselves (`word_runs`): every identifier of the text is one of them.
pub fn words_in(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    word_runs(text).map(move |(start, end)| &text[start..end])
}

/// The maximal runs of ASCII letters, digits and `_` in a text, as (start, end), in order.
pub fn ascii_word_runs(text: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    Runs::<false>::new(text)
}

/// The runs of ones in the masks of a text's 64-byte blocks.
struct Runs<'t, const NON_ASCII: bool> {
    text: &'t [u8],
    /// Where the current block starts.
    base: usize,
    /// The current block's word bits not yet handed out.
    mask: u64,
}

impl<'t, const NON_ASCII: bool> Runs<'t, NON_ASCII> {
    fn new(text: &'t [u8]) -> Self {
        Runs {
            text,
            base: 0,
            mask: word_mask::<NON_ASCII>(&text[..text.len().min(64)]),
        }
    }

    /// Moves to the next block; false past the text's end.
    fn next_block(&mut self) -> bool {
        self.base += 64;
        if self.base >= self.text.len() {
            self.mask = 0;
            return false;
        }
        let end = (self.base + 64).min(self.text.len());
        self.mask = word_mask::<NON_ASCII>(&self.text[self.base..end]);
        true
    }
}

impl<const NON_ASCII: bool> Iterator for Runs<'_, NON_ASCII> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        while self.mask == 0 {
            if !self.next_block() {
                return None;
            }
        }
        let first = self.mask.trailing_zeros();
        let start = self.base + first as usize;
        // Bits past the text's end are zero, so a run ends inside the text.
        let ones = (self.mask >> first).trailing_ones();
        if first + ones < 64 {
            let end = first + ones;
            self.mask &= u64::MAX << end;
            return Some((start, self.base + end as usize));
        }
        // The run reaches the block's end: it ends at the first zero of a later block.
        loop {
            if !self.next_block() {
                return Some((start, self.text.len()));
            }
            let ones = self.mask.trailing_ones();
            if ones < 64 {
                self.mask &= u64::MAX << ones;
                return Some((start, self.base + ones as usize));
            }
        }
    }
}

/// The runs a walk over every byte finds: the oracle of the block-wise ones (here and in
/// the verdicts' word filter).
#[cfg(test)]
pub(crate) fn runs_of_a_byte_walk(text: &[u8], class: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut at = 0;
    while at < text.len() {
        if !class(text[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < text.len() && class(text[at]) {
            at += 1;
        }
        runs.push((start, at));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &[u8]) {
        assert_eq!(
            word_runs(text).collect::<Vec<_>>(),
            runs_of_a_byte_walk(text, is_word_byte),
        );
        assert_eq!(
            ascii_word_runs(text).collect::<Vec<_>>(),
            runs_of_a_byte_walk(text, |b| b.is_ascii_alphanumeric() || b == b'_'),
        );
    }

    #[test]
    fn block_wise_runs_are_the_runs_a_byte_walk_finds() {
        for file in crate::test_data::python_files() {
            check(&file);
        }
        // Every byte value at every offset of a block, between word bytes and between
        // others.
        for b in 0..=255u8 {
            for at in 0..130 {
                let mut text = vec![b'a'; 130];
                text[at] = b;
                check(&text);
                let mut text = vec![b' '; 130];
                text[at] = b;
                check(&text);
            }
        }
        // Runs across one, two and no block boundaries; the empty text; a text of one run.
        for len in [0, 1, 63, 64, 65, 127, 128, 129, 200] {
            check(&vec![b'x'; len]);
            let mut text = vec![b'x'; len];
            if len > 70 {
                text[63] = b'.';
                text[64] = b'.';
            }
            check(&text);
        }
        check("héllo wörld_ ünï 9ab".as_bytes());
    }
}
