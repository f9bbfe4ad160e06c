//! A bounded tail of pi's stderr with the API key blanked out ([`StderrTail`]): what a failed
//! run reports of pi's last words.

use pi_wire::secret::SecretFilter;

/// A bounded tail of stderr with the API key blanked out.
#[derive(Debug)]
pub struct StderrTail {
    buf: Vec<u8>,
    cap: usize,
    secret: Option<Vec<u8>>,
    /// What stands for the key: the same as in every message ([`SecretFilter`]).
    replacement: &'static str,
    total: u64,
}

impl StderrTail {
    /// An empty tail keeping the last `cap` bytes, with `secret` (the API key) blanked out.
    pub fn new(cap: usize, secret: Option<&str>) -> Self {
        StderrTail {
            buf: Vec::new(),
            cap,
            secret: secret
                .filter(|s| !s.is_empty())
                .map(|s| s.as_bytes().to_vec()),
            replacement: secret
                .and_then(SecretFilter::new)
                .map_or("[REDACTED]", |f| f.replacement()),
            total: 0,
        }
    }

    /// Add what pi wrote next on stderr (only a bounded end of it is kept).
    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        // Keep a margin the size of the secret so a key cut by the trim is still found whole.
        let margin = self.secret.as_ref().map_or(0, Vec::len);
        let keep = self.cap + margin;
        if self.buf.len() > 2 * keep.max(1024) {
            let cut = self.buf.len() - keep;
            self.buf.drain(..cut);
        }
    }

    /// The tail as text (lossy), the key replaced (by `[REDACTED]` unless that could form
    /// the key), at most `cap` bytes.
    pub fn text(&self) -> Option<String> {
        if self.total == 0 {
            return None;
        }
        let mut data = self.buf.clone();
        if let Some(secret) = &self.secret {
            data = replace_all(&data, secret, self.replacement.as_bytes());
        }
        if data.len() > self.cap {
            data.drain(..data.len() - self.cap);
        }
        Some(String::from_utf8_lossy(&data).into_owned())
    }
}

fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(i) = memchr::memmem::find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_is_bounded_and_redacted() {
        let mut t = StderrTail::new(16, Some("KEY123"));
        assert_eq!(t.text(), None);
        for _ in 0..1000 {
            t.push(b"noise ");
        }
        t.push(b"xxKEY123yy");
        let text = t.text().unwrap();
        assert!(text.len() <= 16, "{text:?}");
        assert!(text.ends_with("[REDACTED]yy"), "{text:?}");
        assert!(!text.contains("KEY"));
        // Memory stays bounded: at most twice max(cap + key length, 1 KiB) is ever held.
        assert!(t.buf.len() <= 2048, "{}", t.buf.len());
    }
}
