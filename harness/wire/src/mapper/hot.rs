//! The mapper's fast path for its hot lines: `message_update` events.
//!
//! One pass over the line that validates it as JSON (RFC 8259, as `serde_json` does:
//! strings with their escapes and no raw control characters, numbers, literals,
//! nesting, nothing after the value but whitespace) and picks out the few fields a
//! `message_update` needs (the delta, or the raw `toolCall` of a `toolcall_end`). It
//! answers only when it is sure the serde path of the mapper would accept the line and
//! read the same thing from it; on anything unusual
//! (an error, invalid UTF-8, a key of interest repeated or escaped, an escaped lone
//! surrogate, a field order under which the serde path would parse a snapshot, deep
//! nesting, another event type) it answers `None` and the line takes the serde path,
//! which gives the verdict and the error message. Pure; no allocation unless the
//! delta holds escapes.

use std::borrow::Cow;

/// What a hot line says.
#[derive(Debug, PartialEq)]
pub(super) enum Hot<'a> {
    /// A `text_delta` (`thinking: false`) or `thinking_delta` with a string `delta`.
    Delta {
        thinking: bool,
        delta: Cow<'a, str>,
        /// `contentIndex` when present (a plain unsigned integer).
        content_index: Option<u64>,
    },
    /// A `toolcall_end` with its `toolCall` value (raw text, validated).
    ToolCallEnd(&'a str),
    /// An update of another type: nothing to take.
    Nothing,
}

/// serde_json allows 128 levels; below that margin the two always agree.
pub(super) const MAX_DEPTH: u32 = 100;

/// Why the scan gave up (any reason: the serde path decides).
pub(super) struct Fallback;

pub(super) type R<T> = Result<T, Fallback>;

/// Longest top-level value kept in the memo.
const MEMO_MAX: usize = 1024;

/// Scan one line (without its `\n`). `memo` is kept by the caller between lines: pi
/// 0.87.1 repeats the same `usage` object on every `message_update`, and a value whose
/// bytes equal those of a value already validated (at the same depth) is valid too.
pub(super) fn scan<'a>(raw: &'a [u8], memo: &mut Vec<u8>) -> Option<Hot<'a>> {
    // Outside strings any non-ASCII byte is a syntax error; strings holding one are
    // checked to be UTF-8.
    let mut s = Scanner { b: raw, i: 0 };
    s.line(memo).ok()
}

pub(super) struct Scanner<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
}

/// A string read from the line: its body (between the quotes) and whether it holds escapes.
#[derive(Clone, Copy)]
pub(super) struct Str {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) escaped: bool,
}

#[derive(Default)]
struct AmeSeen<'a> {
    kind: Option<&'a str>,
    delta: Option<Str>,
    content_index: Option<u64>,
    index_seen: bool,
    /// `toolCall`: where its value stands.
    tool_call: Option<(usize, usize)>,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Bytes of `w` that end a plain run inside a string: `"`, `\` or a control character.
/// The lowest flagged byte is exact (higher ones may be false positives).
#[inline(always)]
fn specials(w: u64) -> u64 {
    let q = w ^ (ONES * b'"' as u64);
    let bs = w ^ (ONES * b'\\' as u64);
    let zq = q.wrapping_sub(ONES) & !q;
    let zb = bs.wrapping_sub(ONES) & !bs;
    let ctrl = w.wrapping_sub(ONES * 0x20) & !w;
    (zq | zb | ctrl) & HIGH
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline(always)]
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    #[inline(always)]
    pub(super) fn eat(&mut self, c: u8) -> R<()> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Fallback)
        }
    }

    fn line(&mut self, memo: &mut Vec<u8>) -> R<Hot<'a>> {
        self.eat(b'{')?;
        let mut kind: Option<&'a str> = None;
        let mut ame: Option<AmeSeen<'a>> = None;
        let mut message_seen = false;
        self.ws();
        if self.peek() == Some(b'}') {
            return Err(Fallback); // no `type`
        }
        loop {
            self.eat(b'"')?;
            let key = self.string()?;
            if key.escaped {
                return Err(Fallback);
            }
            self.eat(b':')?;
            self.ws();
            match &self.b[key.start..key.end] {
                b"type" => {
                    if kind.is_some() || self.peek() != Some(b'"') {
                        return Err(Fallback);
                    }
                    self.i += 1;
                    let v = self.string()?;
                    if v.escaped {
                        return Err(Fallback);
                    }
                    let k = self.str_at(v)?;
                    if k != "message_update" {
                        return Err(Fallback);
                    }
                    kind = Some(k);
                }
                b"assistantMessageEvent" => {
                    if ame.is_some() || message_seen || self.peek() != Some(b'{') {
                        return Err(Fallback);
                    }
                    self.i += 1;
                    ame = Some(self.ame()?);
                }
                b"message" => {
                    // The serde path parses the snapshot when the type is known and the
                    // update not yet: stay off that case.
                    if message_seen || (kind.is_some() && ame.is_none()) {
                        return Err(Fallback);
                    }
                    message_seen = true;
                    self.value(1)?;
                }
                // Keys the serde path reads (`EventField`), where it may judge a value
                // otherwise than a skip does (a number out of range): left to it.
                b"id" | b"toolCallId" | b"toolName" | b"args" | b"partialResult" | b"result"
                | b"isError" | b"willRetry" | b"attempt" | b"maxAttempts" | b"delayMs"
                | b"errorMessage" | b"parentToolCallId" | b"aborted" => return Err(Fallback),
                _ => self.memo_value(memo)?,
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(Fallback),
            }
            self.ws();
        }
        self.ws();
        if self.i != self.b.len() || kind.is_none() {
            return Err(Fallback);
        }
        let a = ame.ok_or(Fallback)?;
        match a.kind {
            Some(k @ ("text_delta" | "thinking_delta")) => {
                let d = a.delta.ok_or(Fallback)?;
                let delta = if d.escaped {
                    Cow::Owned(unescape(self.str_at(d)?).ok_or(Fallback)?)
                } else {
                    Cow::Borrowed(self.str_at(d)?)
                };
                Ok(Hot::Delta {
                    thinking: k == "thinking_delta",
                    delta,
                    content_index: a.content_index,
                })
            }
            Some("toolcall_end") => {
                let (start, end) = a.tool_call.ok_or(Fallback)?;
                let text = std::str::from_utf8(&self.b[start..end]).map_err(|_| Fallback)?;
                Ok(Hot::ToolCallEnd(text))
            }
            None => Err(Fallback),
            Some(_) => Ok(Hot::Nothing),
        }
    }

    /// The `assistantMessageEvent` object, after its `{`.
    fn ame(&mut self) -> R<AmeSeen<'a>> {
        let mut a = AmeSeen::default();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(a);
        }
        loop {
            self.eat(b'"')?;
            let key = self.string()?;
            if key.escaped {
                return Err(Fallback);
            }
            self.eat(b':')?;
            self.ws();
            match &self.b[key.start..key.end] {
                b"type" => {
                    if a.kind.is_some() || self.peek() != Some(b'"') {
                        return Err(Fallback);
                    }
                    self.i += 1;
                    let v = self.string()?;
                    if v.escaped {
                        return Err(Fallback);
                    }
                    a.kind = Some(self.str_at(v)?);
                }
                b"delta" => {
                    if a.delta.is_some() || self.peek() != Some(b'"') {
                        return Err(Fallback);
                    }
                    self.i += 1;
                    a.delta = Some(self.string()?);
                }
                b"contentIndex" => {
                    if a.index_seen {
                        return Err(Fallback);
                    }
                    a.index_seen = true;
                    a.content_index = Some(self.plain_uint()?);
                }
                b"toolCall" => {
                    if a.tool_call.is_some() {
                        return Err(Fallback);
                    }
                    let start = self.i;
                    self.value(2)?;
                    a.tool_call = Some((start, self.i));
                }
                b"partial" => {
                    // Skipped by the serde path only once a delta, or a type that never
                    // has one, was seen.
                    let skipped = a.delta.is_some()
                        || a.kind
                            .is_some_and(|k| k != "text_delta" && k != "thinking_delta");
                    if !skipped {
                        return Err(Fallback);
                    }
                    self.value(2)?;
                }
                _ => self.value(2)?,
            }
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(a);
                }
                _ => return Err(Fallback),
            }
        }
    }

    /// A top-level value, through the memo: when the line continues with the bytes of
    /// the last small object or array validated at this depth, those bytes are that same
    /// value (a container ends at its closing bracket, whatever follows), valid again.
    fn memo_value(&mut self, memo: &mut Vec<u8>) -> R<()> {
        if !memo.is_empty() && self.b[self.i..].starts_with(memo) {
            self.i += memo.len();
            return Ok(());
        }
        let start = self.i;
        let container = matches!(self.peek(), Some(b'{' | b'['));
        self.value(1)?;
        if container && self.i - start <= MEMO_MAX {
            memo.clear();
            memo.extend_from_slice(&self.b[start..self.i]);
        }
        Ok(())
    }

    /// A number made only of digits, without leading zero, that fits a `u64` (else fall back).
    pub(super) fn plain_uint(&mut self) -> R<u64> {
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((c - b'0') as u64))
                .ok_or(Fallback)?;
            self.i += 1;
        }
        let len = self.i - start;
        if len == 0 || (len > 1 && self.b[start] == b'0') {
            return Err(Fallback);
        }
        match self.peek() {
            Some(b'.' | b'e' | b'E') => Err(Fallback),
            _ => Ok(v),
        }
    }

    /// Any JSON value at nesting `depth` (whitespace before it already skipped).
    /// Scalars inline; containers in [`Scanner::container`].
    #[inline(always)]
    pub(super) fn value(&mut self, depth: u32) -> R<()> {
        match self.peek() {
            Some(b'"') => {
                self.i += 1;
                self.string().map(|_| ())
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.container(depth),
        }
    }

    /// An object, array or literal at nesting `depth`.
    #[inline(never)]
    pub(super) fn container(&mut self, depth: u32) -> R<()> {
        match self.peek() {
            Some(b'{') => {
                if depth >= MAX_DEPTH {
                    return Err(Fallback);
                }
                self.i += 1;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.eat(b'"')?;
                    self.string()?;
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(Fallback),
                    }
                }
            }
            Some(b'[') => {
                if depth >= MAX_DEPTH {
                    return Err(Fallback);
                }
                self.i += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(());
                        }
                        _ => return Err(Fallback),
                    }
                }
            }
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            _ => Err(Fallback),
        }
    }

    pub(super) fn literal(&mut self, lit: &[u8]) -> R<()> {
        if self.b[self.i..].starts_with(lit) {
            self.i += lit.len();
            Ok(())
        } else {
            Err(Fallback)
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, within f64's range as
    /// serde_json judges it (it refuses `1e400` even when the value is ignored): a number
    /// that could come near the limit (over 300 integer digits plus exponent) is left to
    /// the serde path.
    #[inline(always)]
    pub(super) fn number(&mut self) -> R<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_digits = match self.peek() {
            Some(b'0') => {
                self.i += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Fallback),
        };
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(Fallback);
            }
        }
        let mut exponent = 0usize;
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            let negative = match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    true
                }
                Some(b'+') => {
                    self.i += 1;
                    false
                }
                _ => false,
            };
            let start = self.i;
            let n = self.digits();
            if n == 0 {
                return Err(Fallback);
            }
            if n > 4 {
                return Err(Fallback);
            }
            if !negative {
                exponent = self.b[start..self.i]
                    .iter()
                    .fold(0, |acc, d| acc * 10 + usize::from(d - b'0'));
            }
        }
        if int_digits + exponent > 300 {
            return Err(Fallback);
        }
        Ok(())
    }

    /// A string, after its opening quote; leaves `i` after the closing quote. Plain runs
    /// are skipped 16 bytes at a time (SSE2, 8 with SWAR elsewhere); a body with a byte
    /// >= 0x80 is checked to be UTF-8.
    #[inline(always)]
    pub(super) fn string(&mut self) -> R<Str> {
        let start = self.i;
        let mut escaped = false;
        let mut non_ascii = false;
        let b = self.b;
        let mut i = self.i;
        loop {
            skip_plain(b, &mut i, &mut non_ascii);
            match b.get(i) {
                None => return Err(Fallback),
                Some(b'"') => {
                    self.i = i + 1;
                    if non_ascii && std::str::from_utf8(&b[start..i]).is_err() {
                        return Err(Fallback);
                    }
                    return Ok(Str {
                        start,
                        end: i,
                        escaped,
                    });
                }
                Some(b'\\') => {
                    escaped = true;
                    match b.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                        Some(b'u') => {
                            let cp = hex4(b.get(i + 2..i + 6).ok_or(Fallback)?)?;
                            // serde_json reads lone surrogates differently when it skips a
                            // string and when it decodes one: leave all surrogates to it.
                            if (0xD800..=0xDFFF).contains(&cp) {
                                return Err(Fallback);
                            }
                            i += 6;
                        }
                        _ => return Err(Fallback),
                    }
                }
                Some(c) if *c < 0x20 => return Err(Fallback),
                Some(c) => {
                    non_ascii |= *c >= 0x80;
                    i += 1;
                }
            }
        }
    }

    /// A string read from the line, as text.
    #[inline(always)]
    pub(super) fn str_at(&self, s: Str) -> R<&'a str> {
        let body = &self.b[s.start..s.end];
        debug_assert!(std::str::from_utf8(body).is_ok());
        // SAFETY: `string` returned `s` only after seeing every byte of the body: all
        // were ASCII (`non_ascii` false, escapes are ASCII), or the body was checked
        // with `std::str::from_utf8`.
        Ok(unsafe { std::str::from_utf8_unchecked(body) })
    }
}

/// Advance `i` over bytes that are neither `"`, `\\` nor control characters, at least to
/// within 8 bytes of the end or of such a byte; notes bytes >= 0x80 seen (possibly a few
/// past the stop: a hint to check UTF-8, never a verdict).
#[inline(always)]
fn skip_plain(b: &[u8], i: &mut usize, non_ascii: &mut bool) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes at
        // `i` with `i + 16 <= b.len()`.
        unsafe {
            let q = _mm_set1_epi8(b'"' as i8);
            let bs = _mm_set1_epi8(b'\\' as i8);
            let c1f = _mm_set1_epi8(0x1f);
            let mut hi = 0i32;
            while *i + 16 <= b.len() {
                let x = _mm_loadu_si128(b.as_ptr().add(*i) as *const __m128i);
                let ctrl = _mm_cmpeq_epi8(_mm_max_epu8(x, c1f), c1f);
                let m = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
                    ctrl,
                );
                hi |= _mm_movemask_epi8(x);
                let mask = _mm_movemask_epi8(m);
                if mask != 0 {
                    *i += mask.trailing_zeros() as usize;
                    *non_ascii |= hi != 0;
                    return;
                }
                *i += 16;
            }
            *non_ascii |= hi != 0;
        }
    }
    while *i + 8 <= b.len() {
        let w = u64::from_le_bytes(b[*i..*i + 8].try_into().expect("8 bytes"));
        let m = specials(w);
        if m != 0 {
            *non_ascii |= w & HIGH != 0;
            *i += (m.trailing_zeros() / 8) as usize;
            return;
        }
        *non_ascii |= w & HIGH != 0;
        *i += 8;
    }
}

fn hex4(h: &[u8]) -> R<u32> {
    let mut v = 0u32;
    for &c in h {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(Fallback),
        };
        v = v * 16 + d as u32;
    }
    Ok(v)
}

/// Decode a string body already validated by [`Scanner::string`] (no surrogate escapes).
pub(super) fn unescape(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(p) = rest.find('\\') {
        out.push_str(&rest[..p]);
        let e = rest.as_bytes().get(p + 1)?;
        let mut used = 2;
        match e {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let cp = hex4(rest.as_bytes().get(p + 2..p + 6)?).ok()?;
                out.push(char::from_u32(cp)?);
                used = 6;
            }
            _ => return None,
        }
        rest = &rest[p + used..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests;
