//! How deeply a message nests arrays and objects, found by scanning its bytes
//! before any JSON parser sees them.
//!
//! serde_json, and with it tower-lsp-server, gives up on a document nested
//! 128 levels deep, and tower-lsp-server then ends the session. The front
//! door refuses anything nested deeper than [`MAX_DEPTH`] instead, and reads
//! the refused message's id from a copy with its deep parts cut off.

/// The deepest nesting of arrays and objects a message may have. LSP and
/// slipway messages nest about ten levels; serde_json's own limit is 128.
pub const MAX_DEPTH: usize = 64;

/// The index just past the string whose opening quote is at `open` (the end
/// of `text` when it never closes).
fn string_end(text: &[u8], open: usize) -> usize {
    let mut at = open + 1;
    while let Some(p) = memchr::memchr2(b'"', b'\\', text.get(at..).unwrap_or_default()) {
        let hit = at + p;
        if text[hit] == b'"' {
            return hit + 1;
        }
        // A backslash escapes the byte after it (`\"` does not close the string).
        at = hit + 2;
    }
    text.len()
}

/// How deeply `text` nests when that is deeper than `max`; `None` otherwise.
/// Brackets inside strings do not count. Linear in the length of `text`.
pub fn deeper_than(text: &[u8], max: usize) -> Option<usize> {
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    while at < text.len() {
        match text[at] {
            b'"' => {
                at = string_end(text, at);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    (deepest > max).then_some(deepest)
}

/// `text` with every array or object nested deeper than `keep` levels
/// written `null`, so what is left (an id, a method) parses whatever the
/// original's depth.
pub fn flatten(text: &[u8], keep: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut depth, mut at) = (0usize, 0usize);
    while at < text.len() {
        let byte = text[at];
        match byte {
            b'"' => {
                let end = string_end(text, at);
                if depth <= keep {
                    out.extend_from_slice(&text[at..end]);
                }
                at = end;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth == keep + 1 {
                    out.extend_from_slice(b"null");
                } else if depth <= keep {
                    out.push(byte);
                }
            }
            b']' | b'}' => {
                if depth <= keep {
                    out.push(byte);
                }
                depth = depth.saturating_sub(1);
            }
            _ if depth <= keep => out.push(byte),
            _ => {}
        }
        at += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":{}{}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    }

    #[test]
    fn depth_counts_arrays_and_objects_but_not_brackets_in_strings() {
        assert_eq!(deeper_than(br#"{"a":[{"b":1}]}"#, 2), Some(3));
        assert_eq!(deeper_than(br#"{"a":[{"b":1}]}"#, 3), None);
        assert_eq!(deeper_than(br#"{"a":"[[[[{{{{"}"#, 1), None);
        assert_eq!(deeper_than(br#"{"a":"\"[[[[\\"}"#, 1), None);
        assert_eq!(deeper_than(br#"{"a":"\\",  "b":[[1]]}"#, 2), Some(3));
        // The message itself is one level: params nested 200 deep is 201.
        assert_eq!(deeper_than(nested(200).as_bytes(), MAX_DEPTH), Some(201));
        assert_eq!(
            deeper_than(nested(MAX_DEPTH - 1).as_bytes(), MAX_DEPTH),
            None
        );
    }

    #[test]
    fn a_flattened_message_keeps_its_id_and_method() {
        let flat = flatten(nested(100_000).as_bytes(), 1);
        let value: serde_json::Value = serde_json::from_slice(&flat).expect("parses");
        assert_eq!(
            value,
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "m", "params": null})
        );
        let text = br#"{"id":"a]}","p":{"q":["x{",{"r":1}]},"s":2}"#;
        assert_eq!(flatten(text, 2), br#"{"id":"a]}","p":{"q":null},"s":2}"#);
    }
}
