//! Splitting a process's output into lines, the same way for every
//! provider, in time linear in the output: each byte is looked at once
//! (a long line that arrives in many reads is not rescanned from its start)
//! and a line is never longer than [`LINE_LIMIT`] (a stream without
//! newlines comes out in pieces of that size rather than growing forever).

use tokio::sync::mpsc;

use super::OutputEvent;

/// The longest line passed on whole; longer ones are cut into pieces.
pub const LINE_LIMIT: usize = 8 << 20;

/// Splits a byte stream into [`OutputEvent`]s: complete lines without their
/// newline (and a trailing `\r`), invalid UTF-8 replaced, `Activity` for
/// data that does not end a line yet, and the rest flushed as a last line
/// at the end.
pub struct LineSplitter {
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no newline.
    scanned: usize,
    tx: mpsc::UnboundedSender<OutputEvent>,
}

impl LineSplitter {
    /// A splitter sending to `tx`.
    pub fn new(tx: mpsc::UnboundedSender<OutputEvent>) -> LineSplitter {
        LineSplitter {
            pending: Vec::new(),
            scanned: 0,
            tx,
        }
    }

    /// Takes the next bytes of the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        let mut start = 0;
        let mut sent_line = false;
        while let Some(found) = memchr_newline(&self.pending[self.scanned.max(start)..]) {
            let end = self.scanned.max(start) + found;
            self.send(start, end);
            start = end + 1;
            self.scanned = start;
            sent_line = true;
        }
        // A line past the limit goes out in pieces.
        while self.pending.len() - start >= LINE_LIMIT {
            self.send(start, start + LINE_LIMIT);
            start += LINE_LIMIT;
            sent_line = true;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if !sent_line && !self.pending.is_empty() {
            // The receiver only goes when the run is over; nothing to do then.
            self.tx.send(OutputEvent::Activity).ok();
        }
    }

    /// The stream ended: what is left is the last line.
    pub fn finish(self) {
        if !self.pending.is_empty() {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            self.tx.send(OutputEvent::Line(text)).ok();
        }
    }

    fn send(&self, from: usize, to: usize) {
        let text = String::from_utf8_lossy(&self.pending[from..to])
            .trim_end_matches('\r')
            .to_owned();
        self.tx.send(OutputEvent::Line(text)).ok();
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> Vec<OutputEvent> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut splitter = LineSplitter::new(tx);
        for chunk in chunks {
            splitter.push(chunk);
        }
        splitter.finish();
        let mut out = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            out.push(ev);
        }
        out
    }

    fn line(text: &str) -> OutputEvent {
        OutputEvent::Line(text.to_owned())
    }

    #[test]
    fn lines_split_across_reads_come_out_whole() {
        assert_eq!(
            lines(&[b"one\ntw", b"o\r\nthr", b"ee"]),
            vec![
                line("one"),
                line("two"),
                OutputEvent::Activity,
                line("three")
            ]
        );
        assert_eq!(lines(&[b"a\n\nb\n"]), vec![line("a"), line(""), line("b")]);
    }

    #[test]
    fn a_line_without_end_is_cut_at_the_limit_and_scanned_once() {
        // 3 pieces of the limit and a tail, arriving 64 KiB at a time: each
        // read looks only at its own bytes, so this stays linear.
        let total = 3 * LINE_LIMIT + 5;
        let chunk = vec![b'x'; 64 << 10];
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut splitter = LineSplitter::new(tx);
        let mut pushed = 0;
        while pushed < total {
            let n = chunk.len().min(total - pushed);
            splitter.push(&chunk[..n]);
            pushed += n;
        }
        splitter.finish();
        let mut sizes = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            if let OutputEvent::Line(l) = ev {
                sizes.push(l.len());
            }
        }
        assert_eq!(sizes, vec![LINE_LIMIT, LINE_LIMIT, LINE_LIMIT, 5]);
    }
}
