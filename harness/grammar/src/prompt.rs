//! What pi sends as the first prompt: piped stdin as pi keeps it ([`stdin_content`],
//! trimmed like JavaScript's `trim()`) joined with the first argv message ([`join_prompt`]).

/// JavaScript's `String.prototype.trim` whitespace: WhiteSpace (incl. U+FEFF and every
/// space separator) and LineTerminator. Unlike Rust's `char::is_whitespace` it excludes
/// U+0085 and includes U+FEFF.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// What pi keeps of piped stdin: decoded as UTF-8 (invalid bytes become U+FFFD), trimmed
/// like JavaScript's `trim()`, and `None` when nothing is left.
pub fn stdin_content(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let trimmed = text.trim_matches(is_js_whitespace);
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// The first prompt pi sends: the stdin content (already passed through
/// [`stdin_content`]) followed directly, with no separator, by the first argv message.
/// `None` when there is neither. Any further argv messages are sent by pi as separate
/// follow-up prompts. (`@file` text, which pi puts between the two, is not modelled.)
pub fn join_prompt(stdin: Option<&str>, messages: &[String]) -> Option<String> {
    match (stdin, messages.first()) {
        (None, None) => None,
        (s, m) => Some(format!(
            "{}{}",
            s.unwrap_or(""),
            m.map_or("", |m| m.as_str())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_trimmed_like_javascript() {
        assert_eq!(stdin_content(b"  hello\n "), Some("hello".into()));
        assert_eq!(stdin_content(b" \n\t"), None);
        assert_eq!(
            stdin_content("\u{feff}x\u{2028}".as_bytes()),
            Some("x".into())
        );
        // U+0085 is not JavaScript whitespace.
        assert_eq!(stdin_content("\u{85}x".as_bytes()), Some("\u{85}x".into()));
        assert_eq!(stdin_content(b"a\xffb"), Some("a\u{fffd}b".into()));
    }

    #[test]
    fn prompt_join() {
        let m = ["world", "second"].map(String::from);
        assert_eq!(join_prompt(Some("hello"), &m), Some("helloworld".into()));
        assert_eq!(join_prompt(Some("hello"), &[]), Some("hello".into()));
        assert_eq!(join_prompt(None, &m), Some("world".into()));
        assert_eq!(join_prompt(None, &[]), None);
    }
}
