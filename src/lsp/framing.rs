//! LSP base-protocol framing, read forgivingly and in linear time.
//!
//! tower-lsp-server stops reading for good after one undecodable frame, so the
//! front door (`front`) reads the client's bytes itself with this reader: bytes
//! that are not a frame are skipped up to the next `Content-Length` header, a
//! header block that cannot be used is reported and skipped, and a frame whose
//! length is too long is cut at the next header instead of waiting forever.
//! Header lines may end in a bare LF instead of CR LF, as some clients write them.
//! Every byte is looked at a bounded number of times, however the input arrives
//! (a 50 MB body in 64 KiB reads must not be rescanned on each read).

const HEADER: &[u8] = b"content-length:";
/// A body larger than this is refused (its header is skipped).
pub const MAX_BODY: usize = 64 << 20;
/// A header block longer than this is not a header block.
const MAX_HEADER_BLOCK: usize = 8192;

/// One thing the reader found.
#[derive(Debug, PartialEq, Eq)]
pub enum Item {
    /// A frame's body.
    Body(Vec<u8>),
    /// A header block that cannot be used, or a body cut short by the next
    /// header; the bytes were dropped. Says what was wrong.
    Malformed(String),
}

/// An incremental frame reader: feed it bytes, take items out.
#[derive(Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Bytes before this offset are consumed.
    start: usize,
    /// The header block at `start`, once parsed: where the body starts and how long it is.
    pending: Option<(usize, usize)>,
    /// Bytes before this offset were already searched (for a header, or for a
    /// next frame inside a pending body).
    searched: usize,
}

impl FrameReader {
    /// An empty reader.
    pub fn new() -> FrameReader {
        FrameReader::default()
    }

    /// Appends bytes read from the client.
    pub fn feed(&mut self, bytes: &[u8]) {
        // Drop consumed bytes once they are most of the buffer: amortised O(1) per byte.
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.pending = self.pending.map(|(body, len)| (body - self.start, len));
            self.searched = self.searched.saturating_sub(self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete item, or `None` until more bytes arrive.
    pub fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some((body, len)) = self.pending {
                let end = body + len;
                if self.buf.len() >= end {
                    let out = self.buf[body..end].to_vec();
                    self.consume_to(end);
                    return Some(Item::Body(out));
                }
                // A length that is too long must not swallow the frames after it:
                // a raw line feed cannot be inside a JSON string, so a header line
                // in the body's bytes is the next frame.
                let from = self.searched.max(body);
                if let Some(at) = next_header_block(&self.buf, body, from) {
                    self.consume_to(at);
                    return Some(Item::Malformed(
                        "Content-Length runs past the next frame".into(),
                    ));
                }
                self.searched = self.buf.len().max(from);
                return None;
            }
            let rest = &self.buf[self.start..];
            if rest.is_empty() {
                return None;
            }
            if !starts_with_ci(rest, HEADER) {
                // Skip to the next header, searching only bytes not searched yet.
                let from = self.searched.max(self.start);
                match find_ci(&self.buf, from, HEADER) {
                    Some(at) => {
                        tracing::warn!(
                            "skipped {} bytes that are not a protocol frame",
                            at - self.start
                        );
                        self.consume_to(at);
                        continue;
                    }
                    None => {
                        // Keep a tail that may be the start of a header.
                        let keep_from = self.buf.len().saturating_sub(HEADER.len() - 1);
                        if keep_from > self.start {
                            tracing::warn!(
                                "skipped {} bytes that are not a protocol frame",
                                keep_from - self.start
                            );
                            self.consume_to(keep_from);
                        }
                        return None;
                    }
                }
            }
            // A header block at `start`: find its end.
            let from = self.searched.max(self.start);
            let (end, body) = match header_block_end(&self.buf, from) {
                Ok(found) => found,
                Err(resume) => {
                    if self.buf.len() - self.start > MAX_HEADER_BLOCK {
                        self.consume_to(self.start + HEADER.len());
                        return Some(Item::Malformed("the header block never ends".into()));
                    }
                    self.searched = resume;
                    return None;
                }
            };
            let headers = String::from_utf8_lossy(&self.buf[self.start..end]).into_owned();
            let length = headers.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            match length {
                Some(len) if len <= MAX_BODY => {
                    self.pending = Some((body, len));
                    self.searched = body;
                }
                Some(len) => {
                    self.consume_to(body);
                    return Some(Item::Malformed(format!(
                        "a body of {len} bytes is over the limit of {MAX_BODY}"
                    )));
                }
                None => {
                    self.consume_to(body);
                    return Some(Item::Malformed(format!(
                        "bad Content-Length in {headers:?}"
                    )));
                }
            }
        }
    }

    fn consume_to(&mut self, at: usize) {
        self.start = at;
        self.searched = at;
        self.pending = None;
    }
}

fn starts_with_ci(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.len() >= needle.len() && haystack[..needle.len()].eq_ignore_ascii_case(needle)
}

fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack.get(from..)?, needle).map(|p| p + from)
}

/// Case-insensitive search; candidates are found with memchr on the first byte.
fn find_ci(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut at = from;
    while let Some(p) = memchr::memchr2(
        first.to_ascii_lowercase(),
        first.to_ascii_uppercase(),
        haystack.get(at..)?,
    ) {
        let pos = at + p;
        if starts_with_ci(&haystack[pos..], needle) {
            return Some(pos);
        }
        at = pos + 1;
    }
    None
}

/// Where the header block whose unsearched bytes start at `from` ends: at its
/// first empty line, ended by CR LF or, as some clients send it, by a bare LF.
/// `Ok((end of the headers, start of the body))`, or `Err(where to search
/// again)` once more bytes have arrived.
fn header_block_end(buf: &[u8], from: usize) -> Result<(usize, usize), usize> {
    let mut at = from;
    while let Some(p) = memchr::memchr(b'\n', buf.get(at..).unwrap_or_default()) {
        let lf = at + p;
        match (buf.get(lf + 1), buf.get(lf + 2)) {
            (Some(b'\n'), _) => return Ok((lf, lf + 2)),
            (Some(b'\r'), Some(b'\n')) => return Ok((lf, lf + 3)),
            // The empty line may straddle the next read.
            (None, _) | (Some(b'\r'), None) => return Err(lf),
            _ => at = lf + 1,
        }
    }
    Err(buf.len().max(from))
}

/// Where a complete `Content-Length: N` header line ending in a raw LF (CR LF
/// or bare) starts, looking at line ends at or after `from` but never before `floor`.
fn next_header_block(buf: &[u8], floor: usize, from: usize) -> Option<usize> {
    // A header line is short; look back this far from each line end.
    const LINE: usize = 64;
    let mut at = from;
    while let Some(line_end) = find(buf, at, b"\n") {
        let lo = line_end.saturating_sub(LINE).max(floor);
        let mut cand = lo;
        let mut found = None;
        while let Some(p) = find_ci(&buf[..line_end], cand, HEADER) {
            found = Some(p);
            cand = p + 1;
        }
        if let Some(p) = found {
            let value = buf[p + HEADER.len()..line_end].trim_ascii();
            if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                return Some(p);
            }
        }
        at = line_end + 1;
    }
    None
}

/// A body with its header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &[u8], chunk: usize) -> Vec<Item> {
        let mut reader = FrameReader::new();
        let mut items = Vec::new();
        for part in input.chunks(chunk.max(1)) {
            reader.feed(part);
            while let Some(item) = reader.next_item() {
                items.push(item);
            }
        }
        items
    }

    fn body(s: &str) -> Item {
        Item::Body(s.as_bytes().to_vec())
    }

    #[test]
    fn passes_good_frames_and_skips_garbage() {
        let good = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let input = format!(
            "garbage\r\n\r\nContent-Length: {}\r\n\r\n{good}",
            good.len()
        );
        for chunk in [1, 3, 7, 1000] {
            assert_eq!(
                read_all(input.as_bytes(), chunk),
                [body(good)],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn a_short_length_yields_a_cut_body_and_the_next_frame_survives() {
        let good = r#"{"jsonrpc":"2.0","id":2,"method":"y"}"#;
        let bad = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let input = format!(
            "Content-Length: 10\r\n\r\n{bad}Content-Length: {}\r\n\r\n{good}",
            good.len()
        );
        for chunk in [1, 5, 1000] {
            let items = read_all(input.as_bytes(), chunk);
            assert_eq!(items.first(), Some(&body(&bad[..10])), "chunk {chunk}");
            assert_eq!(items.last(), Some(&body(good)), "chunk {chunk}: {items:?}");
        }
    }

    #[test]
    fn a_long_length_does_not_swallow_the_next_frame() {
        let good = r#"{"jsonrpc":"2.0","id":2,"method":"y"}"#;
        let bad = r#"{"jsonrpc":"2.0","id":1}"#;
        // CR LF line ends, and the bare LF ones some clients write.
        for eol in ["\r\n", "\n"] {
            let input = format!(
                "Content-Length: 999{eol}{eol}{bad}Content-Length: {}{eol}{eol}{good}",
                good.len()
            );
            for chunk in [1, 4, 1000] {
                let items = read_all(input.as_bytes(), chunk);
                assert!(
                    matches!(items.first(), Some(Item::Malformed(_))),
                    "chunk {chunk}: {items:?}"
                );
                assert_eq!(items.last(), Some(&body(good)), "chunk {chunk}: {items:?}");
            }
        }
    }

    #[test]
    fn header_text_inside_a_json_string_is_not_a_header() {
        let good = r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"Content-Length: 5\\r\\n"}"#;
        let input = format!("Content-Length: {}\r\n\r\n{good}", good.len());
        assert_eq!(read_all(input.as_bytes(), 3), [body(good)]);
    }

    #[test]
    fn bad_headers_are_reported_and_skipped() {
        let good = r#"{"id":1}"#;
        let input = format!(
            "Content-Length: x\r\n\r\nContent-Length: {}\r\n\r\n{good}",
            good.len()
        );
        let items = read_all(input.as_bytes(), 2);
        assert!(matches!(items[0], Item::Malformed(_)), "{items:?}");
        assert_eq!(items.last(), Some(&body(good)));
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1);
        assert!(matches!(
            read_all(huge.as_bytes(), 100).as_slice(),
            [Item::Malformed(_)]
        ));
    }

    #[test]
    fn headers_are_case_insensitive_and_content_type_is_ignored() {
        let good = r#"{"id":1}"#;
        let input = format!(
            "content-length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{good}",
            good.len()
        );
        assert_eq!(read_all(input.as_bytes(), 1), [body(good)]);
    }

    #[test]
    fn lf_only_headers_are_read_like_crlf_ones() {
        let one = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let two = r#"{"jsonrpc":"2.0","id":2,"method":"y"}"#;
        let input = format!(
            "Content-Length: {}\n\n{one}Content-Length: {}\r\n\r\n{two}content-length: {}\nContent-Type: x\n\r\n{one}",
            one.len(),
            two.len(),
            one.len()
        );
        for chunk in [1, 2, 3, 1000] {
            assert_eq!(
                read_all(input.as_bytes(), chunk),
                [body(one), body(two), body(one)],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn a_large_body_in_small_reads_arrives_whole() {
        let payload = "x".repeat(8 << 20);
        let good = format!(r#"{{"id":1,"p":"{payload}"}}"#);
        let input = format!("Content-Length: {}\r\n\r\n{good}", good.len());
        // How fast is measured by benches/lsp_bench.py; this checks it is whole.
        let items = read_all(input.as_bytes(), 64 * 1024);
        assert_eq!(items, [Item::Body(good.into_bytes())]);
    }
}
