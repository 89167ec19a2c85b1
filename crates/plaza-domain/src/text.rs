//! Rules for text that users (and identity providers, on their behalf)
//! give Plaza: shared by request validation and by provider profiles, so
//! both refuse and keep the same things.

/// Most characters in a display name.
pub const MAX_NAME_CHARS: usize = 100;

/// Most characters in a URL stored for a profile image.
pub const MAX_IMAGE_URL_CHARS: usize = 2048;

/// Characters a one-line text (a name, a title) may not hold: control
/// characters (NUL among them, which PostgreSQL cannot store), and
/// bidirectional overrides and isolates, which make a name display as
/// something else (`\u{202E}` turns `evil\u{202E}gpj.exe` around).
pub fn is_refused_in_line(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// An absolute http(s) URL with a host, of at most `max_chars`, without the
/// control characters a URL parser would silently drop.
pub fn is_web_url(value: &str, max_chars: usize) -> bool {
    value.chars().count() <= max_chars
        && !value.chars().any(char::is_control)
        && url::Url::parse(value)
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
}

/// An address mail can reach: one mailbox `local@domain.tld` as the mail
/// crate parses it (no lists, no display names, no brackets), at most 254
/// bytes, without whitespace, control or bidirectional control characters,
/// its domain a dotted name.
pub fn is_email_address(email: &str) -> bool {
    email.len() <= 254
        && !email
            .chars()
            .any(|c| c.is_whitespace() || is_refused_in_line(c))
        && email.parse::<lettre::Address>().is_ok_and(|address| {
            let domain = address.domain();
            domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_names_and_urls() {
        assert!(is_email_address("ada@example.com"));
        assert!(!is_email_address("a\u{0}b@example.com"));
        assert!(!is_email_address("a\u{202E}b@example.com"));
        assert!(!is_email_address("ada@example"));
        for unreachable in [
            "a@b.test,c@evil.test",
            "a@rt.test>",
            "<a@rt.test>",
            "Ada <a@rt.test>",
            "a@@rt.test",
            "@rt.test",
            "a@rt..test",
            "a@.rt.test",
            "a\"@rt.test",
        ] {
            assert!(!is_email_address(unreachable), "{unreachable}");
        }
        assert!(is_email_address("ada.lovelace+plaza@mail.example.org"));
        assert!(is_refused_in_line('\u{2066}') && !is_refused_in_line('é'));
        assert!(is_web_url("https://img.example/a.png", 100));
        assert!(!is_web_url("javascript:alert(1)", 100));
        assert!(!is_web_url("https://img.example/\ta.png", 100));
    }
}
