//! Realistic values on replay: the recorder's placeholders become this run's values.
//!
//! A recorded cassette says `<SESSION_ID>`, `<CWD>`, `<TS>`, `<PI_ROOT>`, `<TMP>` and the
//! number `1700000000000` where the recording had run-specific values (its `redactions`
//! header lists which). On replay they become a session id (the client's own when it
//! chose one), the real working directory, the current time, fake-pi's install
//! directory and the temp dir, so a client that stores the id and passes it back, or
//! shows a path, sees what real pi would have shown. Only placeholders the header
//! declares are replaced; concrete values in an imported capture replay as recorded.
//! `FAKE_PI_VALUES=recorded` turns this off (byte-for-byte replay of the file).

use std::time::{SystemTime, UNIX_EPOCH};

/// The epoch-millisecond placeholder the recorder writes under time keys.
pub(crate) const EPOCH_MS: &str = "1700000000000";

/// What each placeholder becomes in this run.
pub(crate) struct Values {
    /// (placeholder, replacement inside JSON strings, replacement in plain text).
    fixed: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
    ts: bool,
    epoch: bool,
    /// This run's time, read once when first needed: every `<TS>` and epoch placeholder of
    /// the run gets the same value, as the events of one pi message carry one timestamp.
    /// (Read per line, a message's `message_start` and `message_end` could differ by a
    /// millisecond, and the mapper took them for two messages.)
    now: std::sync::OnceLock<(String, String)>,
}

/// Milliseconds since the epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-11-23T14:18:01.961Z` for an epoch-millisecond time (JavaScript's
/// `toISOString`).
pub(crate) fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// 16 bytes as a UUID's text (`8-4-4-4-12` lower-case hex digits).
fn hyphenated(b: &[u8; 16]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A new session id as pi makes them: a UUIDv7 (time-ordered).
pub(crate) fn uuid_v7(ms: u64) -> String {
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    for x in b[6..].iter_mut() {
        *x = fastrand::u8(..);
    }
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    hyphenated(&b)
}

/// A random UUID (version 4), as Claude Code makes its session ids.
pub(crate) fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    for x in b.iter_mut() {
        *x = fastrand::u8(..);
    }
    b[6] = 0x40 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    hyphenated(&b)
}

fn json_inner(s: &str) -> Vec<u8> {
    let q = serde_json::to_string(s).expect("a string serializes");
    q.as_bytes()[1..q.len() - 1].to_vec()
}

impl Values {
    /// Replacements for the placeholders `declared` (the header's `redactions` keys);
    /// `None` when there is nothing to replace.
    pub(crate) fn new<'a>(
        declared: impl IntoIterator<Item = &'a String>,
        session_id: &str,
        cwd: &str,
        pi_root: &str,
        tmp: &str,
    ) -> Option<Values> {
        Values::from_pairs(
            declared,
            &[
                ("<SESSION_ID>", session_id),
                ("<CWD>", cwd),
                ("<PI_ROOT>", pi_root),
                ("<TMP>", tmp),
            ],
        )
    }

    /// Replacements for the placeholders `declared`: each of `pairs` (placeholder, this
    /// run's value), and the time placeholders.
    pub(crate) fn from_pairs<'a>(
        declared: impl IntoIterator<Item = &'a String>,
        pairs: &[(&str, &str)],
    ) -> Option<Values> {
        let mut v = Values {
            fixed: Vec::new(),
            ts: false,
            epoch: false,
            now: std::sync::OnceLock::new(),
        };
        for key in declared {
            let value = match key.as_str() {
                "<TS>" => {
                    v.ts = true;
                    continue;
                }
                EPOCH_MS => {
                    v.epoch = true;
                    continue;
                }
                k => match pairs.iter().find(|(p, _)| *p == k) {
                    Some((_, value)) => *value,
                    None => continue,
                },
            };
            v.fixed.push((
                key.as_bytes().to_vec(),
                json_inner(value),
                value.as_bytes().to_vec(),
            ));
        }
        (!v.fixed.is_empty() || v.ts || v.epoch).then_some(v)
    }

    /// `data` with every declared placeholder replaced; `json` says whether the bytes are
    /// JSON (values are escaped for JSON strings) or plain text. `None` when nothing was
    /// replaced.
    pub(crate) fn apply(&self, data: &[u8], json: bool) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.apply_into(data, json, &mut out).then_some(out)
    }

    /// Append `data` to `out` with every declared placeholder replaced (see [`Values::apply`]);
    /// true when something was replaced. Only the bytes a placeholder can start with are
    /// looked at one by one (found with `memchr`); the rest is copied in runs.
    pub(crate) fn apply_into(&self, data: &[u8], json: bool, out: &mut Vec<u8>) -> bool {
        self.replace_into(data, json, out, &|| {
            self.now.get_or_init(now_strings).clone()
        })
    }

    /// [`Values::apply_into`] with the clock given: `clock` gives (ISO-8601 time, epoch ms).
    fn replace_into(
        &self,
        data: &[u8],
        json: bool,
        out: &mut Vec<u8>,
        clock: &dyn Fn() -> (String, String),
    ) -> bool {
        // Every placeholder starts with `<` or (the epoch number) with `1`.
        let next = |from: usize| -> Option<usize> {
            let rest = &data[from..];
            let at = if self.epoch {
                memchr::memchr2(b'<', b'1', rest)
            } else {
                memchr::memchr(b'<', rest)
            };
            at.map(|i| from + i)
        };
        // The current time, read once and only when a time placeholder is replaced.
        let mut now: Option<(String, String)> = None;
        let mut copied = 0;
        let mut i = 0;
        let mut changed = false;
        while let Some(at) = next(i) {
            let rest = &data[at..];
            let mut hit: Option<(usize, &[u8])> = None;
            if rest[0] == b'<' {
                for (k, j, p) in &self.fixed {
                    if rest.starts_with(k) {
                        hit = Some((k.len(), if json { j } else { p }));
                        break;
                    }
                }
                if hit.is_none() && self.ts && rest.starts_with(b"<TS>") {
                    let (ts, _) = now.get_or_insert_with(clock);
                    hit = Some((4, ts.as_bytes()));
                }
            } else if rest.starts_with(EPOCH_MS.as_bytes()) {
                // The epoch placeholder is a whole number, not part of a longer one.
                let digit = |b: Option<&u8>| b.is_some_and(u8::is_ascii_digit);
                let k = EPOCH_MS.len();
                if !digit(at.checked_sub(1).and_then(|j| data.get(j))) && !digit(data.get(at + k)) {
                    let (_, s) = now.get_or_insert_with(clock);
                    hit = Some((k, s.as_bytes()));
                }
            }
            match hit {
                Some((len, with)) => {
                    out.extend_from_slice(&data[copied..at]);
                    out.extend_from_slice(with);
                    i = at + len;
                    copied = i;
                    changed = true;
                }
                None => i = at + 1,
            }
        }
        out.extend_from_slice(&data[copied..]);
        changed
    }
}

/// This run's time: (ISO-8601 string, epoch milliseconds as a number).
fn now_strings() -> (String, String) {
    let now = now_ms();
    (iso(now), now.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_like_javascript() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_443_493_977), "2026-11-23T14:18:13.977Z");
        assert_eq!(iso(951_782_400_123), "2000-02-29T00:00:00.123Z");
    }

    #[test]
    fn uuid_v7_shape() {
        let id = uuid_v7(1_795_443_493_977);
        assert_eq!(id.len(), 36);
        assert!(id.starts_with("01a208c5-"), "{id}");
        assert_eq!(&id[14..15], "7");
        assert!("89ab".contains(&id[19..20]));
        assert!(pi_grammar::is_valid_session_id(&id));
    }

    #[test]
    fn placeholders_become_values() {
        let declared = [
            "<SESSION_ID>".to_string(),
            "<CWD>".to_string(),
            EPOCH_MS.to_string(),
        ];
        let v = Values::new(&declared, "sid-1", "/w/a \"b\"", "/opt/pi", "/tmp").unwrap();
        let line = br#"{"id":"<SESSION_ID>","cwd":"<CWD>","t":1700000000000,"n":17000000000001,"ts":"<TS>"}"#;
        let out = String::from_utf8(v.apply(line, true).unwrap()).unwrap();
        assert!(
            out.starts_with(r#"{"id":"sid-1","cwd":"/w/a \"b\"","t":"#),
            "{out}"
        );
        assert!(!out.contains("1700000000000,"), "{out}");
        assert!(
            out.contains("17000000000001"),
            "a longer number stays: {out}"
        );
        assert!(
            out.contains("\"<TS>\""),
            "undeclared placeholders stay: {out}"
        );
        let plain = v.apply(b"in <CWD>\n", false).unwrap();
        assert_eq!(plain, b"in /w/a \"b\"\n");
        assert!(v.apply(b"nothing here", true).is_none());
        assert!(Values::new(&[], "s", "c", "r", "t").is_none());
    }

    /// The replacement as first written: every position tried against every placeholder.
    fn reference(v: &Values, data: &[u8], json: bool, ts: &str, now_s: &str) -> Option<Vec<u8>> {
        let mut subs: Vec<(&[u8], &[u8])> = v
            .fixed
            .iter()
            .map(|(k, j, p)| (k.as_slice(), if json { j.as_slice() } else { p.as_slice() }))
            .collect();
        if v.ts {
            subs.push((b"<TS>", ts.as_bytes()));
        }
        if v.epoch {
            subs.push((EPOCH_MS.as_bytes(), now_s.as_bytes()));
        }
        let mut out = Vec::new();
        let mut i = 0;
        let mut changed = false;
        'scan: while i < data.len() {
            for (k, r) in &subs {
                if data[i..].starts_with(k) {
                    let digits = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_digit());
                    if k[0].is_ascii_digit()
                        && (digits(i.checked_sub(1).and_then(|j| data.get(j)))
                            || digits(data.get(i + k.len())))
                    {
                        continue;
                    }
                    out.extend_from_slice(r);
                    i += k.len();
                    changed = true;
                    continue 'scan;
                }
            }
            out.push(data[i]);
            i += 1;
        }
        changed.then_some(out)
    }

    #[test]
    fn the_memchr_scan_replaces_what_the_byte_scan_replaced() {
        let declared: Vec<String> = ["<SESSION_ID>", "<CWD>", "<TMP>", "<TS>", EPOCH_MS]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let v = Values::new(&declared, "sid", "/w \"q\"", "/r", "/t").unwrap();
        let pieces: [&[u8]; 14] = [
            b"<SESSION_ID>",
            b"<CWD>",
            b"<TMP>",
            b"<TS>",
            b"<PI_ROOT>",
            b"1700000000000",
            b"17000000000001",
            b"<",
            b"1",
            b"7",
            b"<SESSION_",
            b"\"a\":",
            b" ",
            b"\n",
        ];
        fn clock() -> (String, String) {
            (iso(1_795_443_493_977), "1795443493977".into())
        }
        fastrand::seed(7);
        for _ in 0..4000 {
            let n = fastrand::usize(0..12);
            let data: Vec<u8> = (0..n)
                .flat_map(|_| pieces[fastrand::usize(..pieces.len())].iter().copied())
                .collect();
            for json in [true, false] {
                let mut out = b"kept".to_vec();
                let changed = v.replace_into(&data, json, &mut out, &clock);
                let (ts, now_s) = clock();
                let want = reference(&v, &data, json, &ts, &now_s);
                assert_eq!(
                    changed,
                    want.is_some(),
                    "{:?}",
                    String::from_utf8_lossy(&data)
                );
                assert_eq!(
                    String::from_utf8_lossy(&out),
                    String::from_utf8_lossy(&[b"kept", want.as_deref().unwrap_or(&data)].concat()),
                );
            }
        }
    }
}
