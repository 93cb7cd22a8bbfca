//! A forgiving reader in front of the protocol codec. tower-lsp-server stops
//! reading for good after one undecodable frame, which would kill the sidecar
//! on a single bad write by a client. This reader passes well-formed frames
//! through, skips bytes that are not a frame until the next `Content-Length`
//! header, and turns a frame whose body is not JSON into a `slipway/parseError`
//! request, which the server answers with a JSON-RPC parse error (-32700).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The request a malformed frame becomes.
pub const PARSE_ERROR_METHOD: &str = "slipway/parseError";

const HEADER: &[u8] = b"Content-Length:";
const MAX_BODY: usize = 64 << 20;

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// What the buffer holds at its start.
enum Frame {
    /// Need more bytes.
    Incomplete,
    /// Bytes before the next header that are not a frame: drop this many.
    Garbage(usize),
    /// A whole frame: its body, and how many bytes it used.
    Whole(Vec<u8>, usize),
    /// A header block that cannot be used: drop this many bytes.
    BadHeader(usize, String),
}

fn next_frame(buf: &[u8]) -> Frame {
    match find(buf, HEADER) {
        None => {
            // Keep a tail that might be the start of a header.
            let keep = HEADER.len().min(buf.len());
            if buf.len() > keep {
                Frame::Garbage(buf.len() - keep)
            } else {
                Frame::Incomplete
            }
        }
        Some(0) => {
            let Some(end) = find(buf, b"\r\n\r\n") else {
                return if buf.len() > 8192 {
                    Frame::BadHeader(HEADER.len(), "header block never ends".into())
                } else {
                    Frame::Incomplete
                };
            };
            let headers = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length = headers.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.trim()
                    .eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            let Some(length) = length.filter(|l| *l <= MAX_BODY) else {
                return Frame::BadHeader(end + 4, format!("bad Content-Length in {headers:?}"));
            };
            let start = end + 4;
            if buf.len() < start + length {
                // A body cut short by a wrong length may be followed by the next
                // frame's header: do not wait forever for bytes that never come.
                if find(&buf[start..], HEADER).is_some() {
                    return Frame::BadHeader(
                        start,
                        "Content-Length runs past the next frame".into(),
                    );
                }
                return Frame::Incomplete;
            }
            Frame::Whole(buf[start..start + length].to_vec(), start + length)
        }
        Some(offset) => Frame::Garbage(offset),
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

fn parse_error_request(n: u64, detail: &str) -> Vec<u8> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": format!("slipway-parse-error-{n}"),
        "method": PARSE_ERROR_METHOD,
        "params": { "detail": detail },
    });
    frame(body.to_string().as_bytes())
}

/// Copies frames from `input` to `output` until `input` ends.
pub async fn filter<R, W>(mut input: R, mut output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut errors = 0u64;
    let mut eof = false;
    loop {
        loop {
            match next_frame(&buf) {
                Frame::Incomplete => break,
                Frame::Garbage(n) => {
                    tracing::warn!("skipped {n} bytes that are not a protocol frame");
                    buf.drain(..n);
                }
                Frame::BadHeader(n, why) => {
                    tracing::warn!("malformed frame: {why}");
                    errors += 1;
                    buf.drain(..n);
                    if output
                        .write_all(&parse_error_request(errors, &why))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                Frame::Whole(body, used) => {
                    let ok = serde_json::from_slice::<serde_json::Value>(&body).is_ok();
                    let out = if ok {
                        buf.drain(..used);
                        frame(&body)
                    } else {
                        // Maybe the length was wrong: resume at the next header after this one.
                        let skip = find(&buf[HEADER.len()..], HEADER)
                            .map(|p| p + HEADER.len())
                            .unwrap_or(used);
                        buf.drain(..skip.min(used));
                        errors += 1;
                        tracing::warn!("frame body is not JSON");
                        parse_error_request(errors, "the frame body is not valid JSON")
                    };
                    if output.write_all(&out).await.is_err() {
                        return;
                    }
                }
            }
        }
        if eof {
            let _ = output.shutdown().await;
            return;
        }
        match input.read(&mut chunk).await {
            Ok(0) | Err(_) => eof = true,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(input: &[u8]) -> String {
        let (mut w, r) = tokio::io::duplex(1 << 20);
        let mut out = Vec::new();
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            w.write_all(&input).await.expect("write");
            w.shutdown().await.expect("shutdown");
        });
        filter(r, &mut out).await;
        writer.await.expect("writer");
        String::from_utf8(out).expect("utf8")
    }

    #[tokio::test]
    async fn passes_good_frames_and_skips_garbage() {
        let good = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let input = format!(
            "garbage\r\n\r\nContent-Length: {}\r\n\r\n{good}",
            good.len()
        );
        let out = run(input.as_bytes()).await;
        assert_eq!(out, format!("Content-Length: {}\r\n\r\n{good}", good.len()));
    }

    #[tokio::test]
    async fn a_short_length_becomes_a_parse_error_and_the_next_frame_survives() {
        let good = r#"{"jsonrpc":"2.0","id":2,"method":"y"}"#;
        let bad = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;
        let input = format!(
            "Content-Length: 10\r\n\r\n{bad}Content-Length: {}\r\n\r\n{good}",
            good.len()
        );
        let out = run(input.as_bytes()).await;
        assert!(out.contains(PARSE_ERROR_METHOD), "{out}");
        assert!(out.ends_with(good), "{out}");
    }

    #[tokio::test]
    async fn a_long_length_does_not_swallow_the_next_frame() {
        let good = r#"{"jsonrpc":"2.0","id":2,"method":"y"}"#;
        let bad = r#"{"jsonrpc":"2.0","id":1}"#;
        let input = format!(
            "Content-Length: 999\r\n\r\n{bad}Content-Length: {}\r\n\r\n{good}",
            good.len()
        );
        let out = run(input.as_bytes()).await;
        assert!(out.contains(PARSE_ERROR_METHOD), "{out}");
        assert!(out.ends_with(good), "{out}");
    }
}
