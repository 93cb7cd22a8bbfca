//! Everything the CLI prints for a person goes through here, so nothing a
//! repository or a sandbox wrote (a commit subject, a file name, an agent's
//! output line, a branch name in an error) can command the terminal: escape
//! sequences are dropped and control and reordering characters are shown as
//! U+FFFD (`slipway_core::shown`). `print!` and friends are denied in the CLI
//! so a new message cannot bypass it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{ErrorKind, Write};

/// `print!` for a person's terminal.
macro_rules! stdout {
    ($($arg:tt)*) => { $crate::cli::say::to_stdout(&format!($($arg)*)) };
}

/// `println!` for a person's terminal.
macro_rules! stdoutln {
    () => { $crate::cli::say::to_stdout("\n") };
    ($($arg:tt)*) => { $crate::cli::say::to_stdout(&format!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` for a person's terminal.
macro_rules! stderr {
    ($($arg:tt)*) => { $crate::cli::say::to_stderr(&format!($($arg)*)) };
}

/// `eprintln!` for a person's terminal.
macro_rules! stderrln {
    () => { $crate::cli::say::to_stderr("\n") };
    ($($arg:tt)*) => { $crate::cli::say::to_stderr(&format!("{}\n", format_args!($($arg)*))) };
}

/// Writes `text` on stdout, cleaned; a reader that went away (`| head`) ends nothing.
pub fn to_stdout(text: &str) {
    let written = write_clean(&mut std::io::stdout().lock(), text);
    if let Err(e) = written
        && e.kind() != ErrorKind::BrokenPipe
    {
        eprintln!("error: cannot write the result: {e}");
    }
}

/// Writes `text` on stderr, cleaned.
pub fn to_stderr(text: &str) {
    // Nowhere is left to say that stderr failed, and it is no reason to stop.
    write_clean(&mut std::io::stderr().lock(), text).ok();
}

fn write_clean(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(slipway_core::shown::lines(text).as_bytes())?;
    out.flush()
}

/// A JSON document for a terminal: the characters JSON leaves as they are but
/// a terminal obeys or reorders (DEL, the C1 controls, bidirectional
/// overrides) become `\uXXXX` escapes, which mean the same string to any
/// JSON reader.
pub fn json_for_terminal(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    for c in doc.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}') || slipway_core::shown::reorders(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::json_for_terminal;

    #[test]
    fn terminal_json_means_the_same_strings() {
        let value = serde_json::json!({ "subject": "a\u{9b}2J b\u{202E}c\u{7f}", "plain": "é ok" });
        let doc = serde_json::to_string(&value).expect("a json value serializes");
        let shown = json_for_terminal(&doc);
        assert!(
            shown
                .chars()
                .all(|c| !matches!(c, '\u{7f}'..='\u{9f}' | '\u{202E}')),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).expect("still json");
        assert_eq!(back, value);
    }
}
