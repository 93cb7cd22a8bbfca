//! Subject and committer time of commits read straight from the pack files.
//!
//! A branch picker needs two fields of thousands of commits. Asking libgit2 for
//! each one pays for a pack-window mutex, a fresh zlib stream and a full commit
//! parse per object, which is most of the time of a listing. This reader maps
//! the packs once and inflates each commit with one reused decompressor. It is
//! a fast path only: anything it does not read plainly (a loose object, a
//! deltified entry, an index or pack version it does not know, a malformed
//! header) answers `None`, and the caller asks libgit2. It reads files; it
//! never runs anything and never writes.

use std::fs::File;
use std::path::Path;

use git2::Oid;
use memmap2::Mmap;

/// A commit's first paragraph (whitespace squashed as git's `%s` does) and
/// its committer time in seconds since the epoch.
pub type CommitSummary = (String, i64);

/// One `.idx` (version 2) with its `.pack`, both mapped read-only.
struct Pack {
    index: Mmap,
    pack: Mmap,
    count: usize,
}

/// Every pack of an object directory, mapped for reading commits. It is
/// `Sync`: threads share the maps, each with its own [`CommitReader`].
pub struct PackCommits {
    packs: Vec<Pack>,
}

/// Reads commits from a [`PackCommits`] with one reused decompressor.
pub struct CommitReader<'a> {
    packs: &'a PackCommits,
    inflater: libdeflater::Decompressor,
    scratch: Vec<u8>,
}

const OID_LEN: usize = 20;
const FANOUT_END: usize = 8 + 256 * 4;
const OBJ_COMMIT: u8 = 1;
/// Commits larger than this (a huge message) are left to libgit2.
const MAX_COMMIT_BYTES: usize = 1 << 20;

impl PackCommits {
    /// Opens every readable pack under `objects_dir/pack`; packs it cannot map
    /// or does not understand are skipped (their commits go to libgit2).
    pub fn open(objects_dir: &Path) -> PackCommits {
        let mut packs = Vec::new();
        if let Ok(entries) = std::fs::read_dir(objects_dir.join("pack")) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().and_then(|e| e.to_str()) != Some("idx") {
                    continue;
                }
                if let Some(pack) = Pack::open(&path) {
                    packs.push(pack);
                }
            }
        }
        PackCommits { packs }
    }

    /// A reader for one thread.
    pub fn reader(&self) -> CommitReader<'_> {
        CommitReader {
            packs: self,
            inflater: libdeflater::Decompressor::new(),
            scratch: Vec::new(),
        }
    }
}

impl CommitReader<'_> {
    /// The subject and committer time of `oid`, if it is a plainly stored
    /// commit in one of the packs.
    pub fn summary(&mut self, oid: &Oid) -> Option<CommitSummary> {
        let key = oid.as_bytes();
        let (pack, offset) = self
            .packs
            .packs
            .iter()
            .find_map(|pack| pack.find(key).map(|offset| (pack, offset)))?;
        let (kind, size, data_start) = entry_header(&pack.pack, offset)?;
        if kind != OBJ_COMMIT || size > MAX_COMMIT_BYTES {
            return None;
        }
        // The stream's end is not recorded; the inflater stops at it and
        // checks its Adler-32, so the rest of the pack may follow.
        let stream = pack
            .pack
            .get(data_start..pack.pack.len().checked_sub(OID_LEN)?)?;
        self.scratch.resize(size, 0);
        let written = self
            .inflater
            .zlib_decompress(stream, &mut self.scratch)
            .ok()?;
        if written != size {
            return None;
        }
        parse_commit(&self.scratch)
    }
}

impl Pack {
    fn open(index_path: &Path) -> Option<Pack> {
        let pack_path = index_path.with_extension("pack");
        // SAFETY: git never rewrites a pack or its index in place (new ones are
        // written aside and renamed; old ones are unlinked, which keeps the
        // mapping valid), and every read below is bounds-checked.
        let index = unsafe { Mmap::map(&File::open(index_path).ok()?) }.ok()?;
        let pack = unsafe { Mmap::map(&File::open(pack_path).ok()?) }.ok()?;
        if index.get(..8)? != b"\xfftOc\x00\x00\x00\x02" {
            return None;
        }
        if pack.get(..4)? != b"PACK" || !matches!(be32(&pack, 4)?, 2 | 3) {
            return None;
        }
        let count = be32(&index, FANOUT_END - 4)? as usize;
        // Names, CRCs and offsets must all be there.
        if index.len() < FANOUT_END + count * (OID_LEN + 8) + 2 * OID_LEN {
            return None;
        }
        Some(Pack { index, pack, count })
    }

    /// The pack offset of `oid`, found through the fan-out table and a binary
    /// search of the sorted names.
    fn find(&self, oid: &[u8]) -> Option<usize> {
        let first = *oid.first()? as usize;
        let lo = if first == 0 {
            0
        } else {
            be32(&self.index, 8 + (first - 1) * 4)? as usize
        };
        let hi = be32(&self.index, 8 + first * 4)? as usize;
        let (mut lo, mut hi) = (lo, hi);
        let position = loop {
            if lo >= hi {
                return None;
            }
            let mid = lo + (hi - lo) / 2;
            let at = FANOUT_END + mid * OID_LEN;
            match self.index.get(at..at + OID_LEN)?.cmp(oid) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => break mid,
            }
        };
        let offsets = FANOUT_END + self.count * (OID_LEN + 4);
        let small = be32(&self.index, offsets + position * 4)?;
        if small & 0x8000_0000 == 0 {
            return Some(small as usize);
        }
        // A pack over 2 GiB keeps large offsets in a second table.
        let large_at = offsets + self.count * 4 + (small & 0x7fff_ffff) as usize * 8;
        let bytes = self.index.get(large_at..large_at + 8)?;
        usize::try_from(u64::from_be_bytes(bytes.try_into().ok()?)).ok()
    }
}

/// The type, inflated size and data start of the pack entry at `offset`.
fn entry_header(pack: &[u8], offset: usize) -> Option<(u8, usize, usize)> {
    let mut at = offset;
    let mut byte = *pack.get(at)?;
    at += 1;
    let kind = (byte >> 4) & 0x7;
    let mut size = (byte & 0x0f) as usize;
    let mut shift = 4;
    while byte & 0x80 != 0 {
        byte = *pack.get(at)?;
        at += 1;
        if shift > 56 {
            return None;
        }
        size |= ((byte & 0x7f) as usize) << shift;
        shift += 7;
    }
    Some((kind, size, at))
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Reads the committer time and the subject from a raw commit; `None` when a
/// header is not in the plain form (libgit2 then decides).
fn parse_commit(raw: &[u8]) -> Option<CommitSummary> {
    let (headers, message) = match find(raw, b"\n\n") {
        Some(at) => (&raw[..at + 1], &raw[at + 2..]),
        None => (raw, &raw[raw.len()..]),
    };
    if !headers.starts_with(b"tree ") {
        return None;
    }
    let committer = headers
        .split(|b| *b == b'\n')
        .find_map(|line| line.strip_prefix(b"committer "))?;
    let after_email = &committer[committer.iter().rposition(|b| *b == b'>')? + 1..];
    let seconds = after_email.strip_prefix(b" ")?;
    let digits = seconds
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(seconds.len());
    if digits == 0 || digits > 18 || seconds.get(digits).is_some_and(|b| *b != b' ') {
        return None;
    }
    let time = std::str::from_utf8(&seconds[..digits]).ok()?.parse().ok()?;
    Some((subject(message), time))
}

/// The first paragraph of a commit message on one line, exactly as libgit2's
/// `git_commit_summary`: leading newlines skipped, a whitespace run that holds
/// a newline becomes one space, other runs are kept, trailing space dropped.
pub fn subject(message: &[u8]) -> String {
    // libgit2 reads the message as a C string.
    let message = match message.iter().position(|b| *b == 0) {
        Some(nul) => &message[..nul],
        None => message,
    };
    let start = message
        .iter()
        .position(|b| *b != b'\n')
        .unwrap_or(message.len());
    let message = &message[start..];
    let mut out = Vec::with_capacity(message.len().min(128));
    let mut space: Option<(usize, bool)> = None;
    for (at, &byte) in message.iter().enumerate() {
        if byte == b'\n' {
            // A paragraph ends at a blank (or whitespace-only) line or at the end.
            let rest = &message[at + 1..];
            let blank = rest
                .iter()
                .position(|b| !is_space_not_newline(*b))
                .is_none_or(|first| rest[first] == b'\n');
            if blank {
                break;
            }
        }
        if is_space(byte) {
            let (_, newline) = space.get_or_insert((at, false));
            *newline |= byte == b'\n';
        } else {
            if let Some((begin, newline)) = space.take() {
                if newline {
                    out.push(b' ');
                } else {
                    out.extend_from_slice(&message[begin..at]);
                }
            }
            out.push(byte);
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// C's `isspace`: space, \t, \n, \v, \f, \r.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn is_space_not_newline(b: u8) -> bool {
    is_space(b) && b != b'\n'
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_matches_libgit2_rules() {
        assert_eq!(subject(b"one line\n"), "one line");
        assert_eq!(subject(b"\n\nleading newlines\n"), "leading newlines");
        assert_eq!(subject(b"wrapped\nsubject\n\nbody"), "wrapped subject");
        assert_eq!(subject(b"keeps  inner\tspace\n"), "keeps  inner\tspace");
        assert_eq!(subject(b"stops at\n   \nwhitespace line"), "stops at");
        assert_eq!(subject(b"trailing   "), "trailing");
        assert_eq!(subject(b""), "");
    }

    #[test]
    fn committer_time_needs_the_plain_form() {
        let raw = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@x> 1 +0000\ncommitter C <c@x> 1700000123 +0100\n\nsubject\n";
        assert_eq!(parse_commit(raw), Some(("subject".to_owned(), 1700000123)));
        let odd = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\ncommitter C <c@x> soon\n\nx\n";
        assert_eq!(parse_commit(odd), None);
    }
}
