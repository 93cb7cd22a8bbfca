//! Reading git config text that came from an untrusted place (a
//! `.gitmodules` blob an agent committed) without libgit2's config loader,
//! which would follow `include.path` to any file on the host, a fifo
//! included. Only the syntax is read: sections, subsections, keys and
//! values as git parses them; nothing is included, nothing is run.

/// One `key = value` of a config text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The section, as written (git compares it case-insensitively).
    pub section: String,
    /// The subsection (`[section "sub"]`, case-sensitive), if any.
    pub subsection: Option<String>,
    /// The key, as written (case-insensitive in git).
    pub key: String,
    /// The value; `None` for a bare key (git's boolean true).
    pub value: Option<String>,
}

/// Every entry of `text`, or the 1-based line where it stops being git config.
pub fn parse(text: &[u8]) -> Result<Vec<Entry>, usize> {
    let text = String::from_utf8_lossy(text);
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    let mut out = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    loop {
        // Leading blanks of a line.
        while matches!(chars.peek(), Some(' ' | '\t' | '\r')) {
            chars.next();
        }
        match chars.next() {
            None => break,
            Some('\n') => line += 1,
            Some('#' | ';') => skip_line(&mut chars, &mut line),
            Some('[') => {
                section = Some(parse_section(&mut chars).ok_or(line)?);
                // What follows a header on its line may only be a comment or a key.
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let (sec, sub) = section.clone().ok_or(line)?;
                let mut key = String::from(c);
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        key.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                while matches!(chars.peek(), Some(' ' | '\t')) {
                    chars.next();
                }
                let value = match chars.peek() {
                    None | Some('\n' | '\r' | '#' | ';') => {
                        skip_line(&mut chars, &mut line);
                        None
                    }
                    Some('=') => {
                        chars.next();
                        Some(parse_value(&mut chars, &mut line).ok_or(line)?)
                    }
                    Some(_) => return Err(line),
                };
                out.push(Entry {
                    section: sec,
                    subsection: sub,
                    key,
                    value,
                });
            }
            Some(_) => return Err(line),
        }
    }
    Ok(out)
}

fn skip_line(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, line: &mut usize) {
    for c in chars.by_ref() {
        if c == '\n' {
            *line += 1;
            break;
        }
    }
}

/// After `[`: `name]`, `name "sub"]` or the old `name.sub]`.
fn parse_section(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Option<(String, Option<String>)> {
    let mut name = String::new();
    loop {
        match chars.next()? {
            ']' => {
                if name.is_empty() {
                    return None;
                }
                return Some(match name.split_once('.') {
                    Some((sec, sub)) => (sec.to_owned(), Some(sub.to_ascii_lowercase())),
                    None => (name, None),
                });
            }
            c if c.is_ascii_alphanumeric() || c == '-' || c == '.' => name.push(c),
            ' ' | '\t' => break,
            _ => return None,
        }
    }
    while matches!(chars.peek(), Some(' ' | '\t')) {
        chars.next();
    }
    if chars.next()? != '"' {
        return None;
    }
    let mut sub = String::new();
    loop {
        match chars.next()? {
            '"' => break,
            '\\' => match chars.next()? {
                '\n' => return None,
                c => sub.push(c),
            },
            '\n' => return None,
            c => sub.push(c),
        }
    }
    (chars.next()? == ']').then_some((name, Some(sub)))
}

/// After `=`: the value up to the end of its (possibly continued) line.
fn parse_value(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line: &mut usize,
) -> Option<String> {
    let mut value = String::new();
    let mut quoted = false;
    // Blanks outside quotes are kept only when something follows them.
    let mut pending_blank = String::new();
    while matches!(chars.peek(), Some(' ' | '\t')) {
        chars.next();
    }
    loop {
        let Some(c) = chars.next() else {
            return (!quoted).then_some(value);
        };
        match c {
            '\n' if quoted => return None,
            '\n' => {
                *line += 1;
                return Some(value);
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            ' ' | '\t' if !quoted => pending_blank.push(c),
            '#' | ';' if !quoted => {
                skip_line(chars, line);
                return Some(value);
            }
            '"' => {
                value.push_str(&std::mem::take(&mut pending_blank));
                quoted = !quoted;
            }
            '\\' => {
                value.push_str(&std::mem::take(&mut pending_blank));
                match chars.next()? {
                    '\n' => *line += 1,
                    'n' => value.push('\n'),
                    't' => value.push('\t'),
                    'b' => {
                        value.pop();
                    }
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    _ => return None,
                }
            }
            c => {
                value.push_str(&std::mem::take(&mut pending_blank));
                value.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Entry {
        let mut all = parse(text.as_bytes()).expect("parses");
        assert_eq!(all.len(), 1, "{all:?}");
        all.remove(0)
    }

    #[test]
    fn reads_what_git_reads() {
        let e = one("[submodule \"a \\\"b\\\"\"]\n  url = x ; comment\n");
        assert_eq!(e.section, "submodule");
        assert_eq!(e.subsection.as_deref(), Some("a \"b\""));
        assert_eq!(e.value.as_deref(), Some("x"));
        let e = one("[s \"n\"]\nupdate = \"!touch ; x\"  # c\n");
        assert_eq!(e.value.as_deref(), Some("!touch ; x"));
        let e = one("[s \"n\"]\n\tpath = a\\\nb\n");
        assert_eq!(e.value.as_deref(), Some("ab"));
        let e = one("[s \"n\"]\n\tflag\n");
        assert_eq!(e.value, None);
        let e = one("[Sub.Name]\nk=v\r\n");
        assert_eq!(e.subsection.as_deref(), Some("name"));
        assert_eq!(e.value.as_deref(), Some("v"));
        let e = one("# top\n[s \"n\"] k = v w \n");
        assert_eq!(e.value.as_deref(), Some("v w"));
    }

    #[test]
    fn stops_where_git_would() {
        assert_eq!(parse(b"[s \"n\"\nk = v\n"), Err(1));
        assert_eq!(parse(b"k = v\n"), Err(1));
        assert_eq!(parse(b"[s]\nk = \"open\n"), Err(2));
        assert_eq!(parse(b"[s]\n\n9k = v\n"), Err(3));
        assert_eq!(parse(b"[s]\nk = \\q\n"), Err(2));
    }
}
