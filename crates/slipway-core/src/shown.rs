//! Text that came out of a sandbox (an agent's question, its current step,
//! a check's output, a log's last line) made safe to show to a person.
//!
//! Such text reaches the user's terminal through the CLI and their editor
//! through the sidecar, so an agent could otherwise write escape sequences
//! there: rewrite the screen or the window title, hide text, or set the
//! clipboard (OSC 52). Escape sequences are dropped whole, every other
//! control character becomes U+FFFD, and so do the characters that reorder
//! text as it is shown (bidirectional overrides and isolates, the "trojan
//! source" trick), so what a person reads is what the agent wrote.

/// `text` as one line: also newlines and tabs become spaces.
pub fn line(text: &str) -> String {
    clean(text, false)
}

/// `text` with its lines and tabs kept.
pub fn lines(text: &str) -> String {
    clean(text, true)
}

/// [`line`] for an owned string: kept as it is, without copying, when there
/// is nothing to clean (most commit subjects), for lists of thousands.
pub fn owned_line(text: String) -> String {
    if text.chars().any(|c| c.is_control() || reorders(c)) {
        line(&text)
    } else {
        text
    }
}

/// Whether `c` reorders the text around it when shown.
pub fn reorders(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn clean(text: &str, keep_lines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            // The 8-bit CSI and OSC introducers start sequences too.
            '\u{9b}' => skip_until_final(&mut chars),
            '\u{9d}' => skip_string(&mut chars),
            '\n' | '\t' if keep_lines => out.push(c),
            '\n' | '\t' => out.push(' '),
            '\r' => {}
            c if c.is_control() || reorders(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Skips what follows an ESC: a CSI (`ESC [` … final byte), a string
/// (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` … BEL or `ESC \`), or a
/// two-character escape.
fn skip_escape(chars: &mut Chars<'_>) {
    match chars.next() {
        Some('[') => skip_until_final(chars),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_string(chars),
        // `ESC ( B` and the like: an intermediate, then one more.
        Some(' '..='/') => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a CSI's parameters up to and with its final byte (`@`–`~`).
fn skip_until_final(chars: &mut Chars<'_>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            return;
        }
    }
}

/// Skips a control string up to and with its end: BEL, ST (U+9C) or `ESC \`.
fn skip_string(chars: &mut Chars<'_>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_dropped_whole() {
        assert_eq!(line("\u{1b}[31mred\u{1b}[0m text"), "red text");
        assert_eq!(line("a\u{1b}]0;pwned title\u{7}b"), "ab");
        assert_eq!(
            line("a\u{1b}]52;c;aGk=\u{1b}\\b"),
            "ab",
            "OSC 52 sets the clipboard"
        );
        assert_eq!(line("a\u{9b}2Jb"), "ab");
        assert_eq!(line("a\u{1b}(Bb"), "ab");
        assert_eq!(line("cut off \u{1b}[12"), "cut off ");
    }

    #[test]
    fn other_controls_and_reordering_characters_are_shown_as_replacements() {
        assert_eq!(line("a\u{8}b\u{0}c"), "a\u{FFFD}b\u{FFFD}c");
        assert_eq!(
            line("access\u{202E}level\u{2066}"),
            "access\u{FFFD}level\u{FFFD}"
        );
        assert_eq!(line("one\ntwo\tthree\r\n"), "one two three ");
        assert_eq!(lines("one\ntwo\tthree\r\n"), "one\ntwo\tthree\n");
    }

    #[test]
    fn plain_text_is_left_alone() {
        let text = "editing src/cli.rs — ¿qué? 日本語 🚀";
        assert_eq!(line(text), text);
    }
}
