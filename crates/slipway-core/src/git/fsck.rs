//! The object checks `git fsck` makes when `transfer.fsckObjects` is on, for
//! objects that come out of a sandbox (DESIGN §2 "Import checks every
//! object"). An agent can write any bytes as an object with plumbing; git
//! itself refuses to take such objects over the wire, and slipway refuses to
//! take them into the host's store.
//!
//! Every rule git's fsck reports for trees, commits, tags and `.gitmodules`
//! files is an error here, including the ones git only warns about (a tree
//! entry named `.git`, `..` or `a/b`, a zero-padded mode): a run's branch has
//! no reason to hold any of them, and each one is a way to make a checkout
//! write outside the files it should. Names are judged by gitoxide's
//! `gix-validate` with git's HFS and NTFS protections on, whatever the
//! platform, so `.GIT`, `.git.`, `git~1` and `.g\u{200c}it` are refused
//! everywhere.

use std::collections::HashSet;

use bstr::BStr;
use git2::Oid;

/// One of git's fsck message ids, the rule an object broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Rule {
    /// A tree entry named `.`.
    HasDot,
    /// A tree entry named `..`.
    HasDotdot,
    /// A tree entry named `.git` in any spelling a filesystem folds to it.
    HasDotgit,
    /// A tree entry whose name holds a `/`.
    FullPathname,
    /// A tree entry with an empty name.
    EmptyName,
    /// A tree entry with a mode git does not write.
    BadFilemode,
    /// A tree entry whose mode has a leading zero.
    ZeroPaddedFilemode,
    /// Two entries of one tree with the same name.
    DuplicateEntries,
    /// Tree entries out of git's order.
    TreeNotSorted,
    /// A tree entry naming the all-zero object id.
    NullSha1,
    /// A tree that cannot be parsed.
    BadTree,
    /// A `.gitmodules` that is a symlink.
    GitmodulesSymlink,
    /// A `.gitmodules` that is not a blob.
    GitmodulesBlob,
    /// A `.gitmodules` too large to check.
    GitmodulesLarge,
    /// A `.gitmodules` that is not a readable config file.
    GitmodulesParse,
    /// A submodule name that leaves its folder (`..`) or is empty.
    GitmodulesName,
    /// A submodule url that git would take for an option or that smuggles a line.
    GitmodulesUrl,
    /// A submodule path that git would take for an option.
    GitmodulesPath,
    /// A submodule `update` that names a command (`!cmd`).
    GitmodulesUpdate,
    /// A `.gitattributes` that is a symlink.
    GitattributesSymlink,
    /// A `.gitignore` that is a symlink.
    GitignoreSymlink,
    /// A `.mailmap` that is a symlink.
    MailmapSymlink,
    /// A commit without a valid `tree` line first.
    BadTreeSha1,
    /// A commit `parent` line that is not an object id.
    BadParentSha1,
    /// A commit without an author.
    MissingAuthor,
    /// A commit with more than one author.
    MultipleAuthors,
    /// A commit without a committer.
    MissingCommitter,
    /// An author, committer or tagger line that is not `Name <email> time zone`.
    BadIdent,
    /// A NUL byte in an object's header.
    NulInHeader,
    /// A header that does not end in a blank line or a message.
    UnterminatedHeader,
    /// A tag without a valid `object` line.
    BadObjectSha1,
    /// A tag without a valid `type` line.
    BadType,
    /// A tag without a `tag` line.
    MissingTagEntry,
}

impl Rule {
    /// git's own name of the rule (`git fsck`'s message id).
    pub fn name(self) -> &'static str {
        match self {
            Rule::HasDot => "hasDot",
            Rule::HasDotdot => "hasDotdot",
            Rule::HasDotgit => "hasDotgit",
            Rule::FullPathname => "fullPathname",
            Rule::EmptyName => "emptyName",
            Rule::BadFilemode => "badFilemode",
            Rule::ZeroPaddedFilemode => "zeroPaddedFilemode",
            Rule::DuplicateEntries => "duplicateEntries",
            Rule::TreeNotSorted => "treeNotSorted",
            Rule::NullSha1 => "nullSha1",
            Rule::BadTree => "badTree",
            Rule::GitmodulesSymlink => "gitmodulesSymlink",
            Rule::GitmodulesBlob => "gitmodulesBlob",
            Rule::GitmodulesLarge => "gitmodulesLarge",
            Rule::GitmodulesParse => "gitmodulesParse",
            Rule::GitmodulesName => "gitmodulesName",
            Rule::GitmodulesUrl => "gitmodulesUrl",
            Rule::GitmodulesPath => "gitmodulesPath",
            Rule::GitmodulesUpdate => "gitmodulesUpdate",
            Rule::GitattributesSymlink => "gitattributesSymlink",
            Rule::GitignoreSymlink => "gitignoreSymlink",
            Rule::MailmapSymlink => "mailmapSymlink",
            Rule::BadTreeSha1 => "badTreeSha1",
            Rule::BadParentSha1 => "badParentSha1",
            Rule::MissingAuthor => "missingAuthor",
            Rule::MultipleAuthors => "multipleAuthors",
            Rule::MissingCommitter => "missingCommitter",
            Rule::BadIdent => "badIdent",
            Rule::NulInHeader => "nulInHeader",
            Rule::UnterminatedHeader => "unterminatedHeader",
            Rule::BadObjectSha1 => "badObjectSha1",
            Rule::BadType => "badType",
            Rule::MissingTagEntry => "missingTagEntry",
        }
    }
}

/// An object that breaks a rule: which, and what in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {object} breaks git's fsck rule {} ({detail})", rule.name())]
pub struct Violation {
    /// The object.
    pub object: Oid,
    /// Its type (`tree`, `commit`, `tag`, `blob`).
    pub kind: &'static str,
    /// The rule.
    pub rule: Rule,
    /// What broke it, for people (an entry's name, a line).
    pub detail: String,
}

/// The largest `.gitmodules` git checks (`GITMODULES_LARGE` beyond it).
pub const GITMODULES_LIMIT: usize = 1 << 20;

/// One entry of a checked tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// The object it names.
    pub id: Oid,
    /// Its mode.
    pub mode: u32,
    /// Whether it is named `.gitmodules` (in any spelling git folds to it).
    pub gitmodules: bool,
}

impl TreeEntry {
    /// A blob or symlink (not a folder, not a submodule).
    pub fn is_blob(&self) -> bool {
        matches!(self.mode, 0o100644 | 0o100755 | 0o120000)
    }

    /// A submodule commit, not an object of this repository.
    pub fn is_gitlink(&self) -> bool {
        self.mode == 0o160000
    }
}

/// git's protections for names, with HFS and NTFS on whatever the
/// platform: a repository is checked out on other machines too.
const NAME_OPTIONS: gix_validate::path::component::Options =
    gix_validate::path::component::Options {
        protect_windows: false,
        protect_hfs: true,
        protect_ntfs: true,
    };

/// Checks a tree's raw bytes as `git fsck` does and returns its entries.
pub fn check_tree(id: Oid, mut data: &[u8]) -> Result<Vec<TreeEntry>, Violation> {
    let fail = |rule: Rule, name: &[u8]| Violation {
        object: id,
        kind: "tree",
        rule,
        detail: if name.is_empty() {
            "an entry".to_owned()
        } else {
            format!("entry {:?}", String::from_utf8_lossy(name))
        },
    };
    let mut out = Vec::new();
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut previous: Option<(&[u8], bool)> = None;
    while !data.is_empty() {
        let space = data
            .iter()
            .position(|&b| b == b' ')
            .ok_or_else(|| fail(Rule::BadTree, b""))?;
        let mode_text = &data[..space];
        let nul = data[space..]
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| fail(Rule::BadTree, b""))?
            + space;
        let name = &data[space + 1..nul];
        let raw = data
            .get(nul + 1..nul + 21)
            .ok_or_else(|| fail(Rule::BadTree, name))?;
        let entry_id = Oid::from_bytes(raw).map_err(|_| fail(Rule::BadTree, name))?;
        data = &data[nul + 21..];

        if mode_text.is_empty() || !mode_text.iter().all(|b| (b'0'..=b'7').contains(b)) {
            return Err(fail(Rule::BadTree, name));
        }
        if mode_text[0] == b'0' {
            return Err(fail(Rule::ZeroPaddedFilemode, name));
        }
        let mode = mode_text
            .iter()
            .try_fold(0u32, |m, b| {
                m.checked_mul(8)?.checked_add(u32::from(b - b'0'))
            })
            .ok_or_else(|| fail(Rule::BadFilemode, name))?;
        if !matches!(mode, 0o100644 | 0o100755 | 0o120000 | 0o40000 | 0o160000) {
            return Err(fail(Rule::BadFilemode, name));
        }
        if entry_id.is_zero() {
            return Err(fail(Rule::NullSha1, name));
        }
        let symlink = mode == 0o120000;
        check_name(name, symlink).map_err(|rule| fail(rule, name))?;
        let gitmodules = is_dot_file(name, "gitmodules", "gi7eba");
        if gitmodules && mode == 0o40000 {
            return Err(fail(Rule::GitmodulesBlob, name));
        }
        if symlink {
            for (stem, short, rule) in [
                ("gitattributes", "gi7d29", Rule::GitattributesSymlink),
                ("gitignore", "gi250a", Rule::GitignoreSymlink),
                ("mailmap", "maba30", Rule::MailmapSymlink),
            ] {
                if is_dot_file(name, stem, short) {
                    return Err(fail(rule, name));
                }
            }
        }

        let is_dir = mode == 0o40000;
        if !seen.insert(name) {
            return Err(fail(Rule::DuplicateEntries, name));
        }
        if let Some((before, before_dir)) = previous
            && tree_order(before, before_dir, name, is_dir) != std::cmp::Ordering::Less
        {
            return Err(fail(Rule::TreeNotSorted, name));
        }
        previous = Some((name, is_dir));
        out.push(TreeEntry {
            id: entry_id,
            mode,
            gitmodules,
        });
    }
    Ok(out)
}

/// A tree entry's name by git's rules for what a checkout may create.
pub(crate) fn check_name(name: &[u8], symlink: bool) -> Result<(), Rule> {
    use gix_validate::path::component::{Error, Mode};
    let mode = symlink.then_some(Mode::Symlink);
    match gix_validate::path::component(BStr::new(name), mode, NAME_OPTIONS) {
        Ok(_) => Ok(()),
        Err(Error::Empty) => Err(Rule::EmptyName),
        Err(Error::PathSeparator) => Err(Rule::FullPathname),
        Err(Error::Relative) if name == b"." => Err(Rule::HasDot),
        Err(Error::Relative) => Err(Rule::HasDotdot),
        Err(Error::SymlinkedGitModules) => Err(Rule::GitmodulesSymlink),
        // `.git` in every spelling, and anything else the crate refuses.
        Err(_) => Err(Rule::HasDotgit),
    }
}

/// Whether `name` is `.<stem>` as a case-folding filesystem sees it (ASCII
/// case, trailing dots and spaces NTFS drops, its 8.3 short name).
fn is_dot_file(name: &[u8], stem: &str, short: &str) -> bool {
    let trimmed = {
        let mut end = name.len();
        while end > 0 && matches!(name[end - 1], b'.' | b' ') {
            end -= 1;
        }
        &name[..end]
    };
    let long = format!(".{stem}");
    if trimmed.eq_ignore_ascii_case(long.as_bytes()) {
        return true;
    }
    // NTFS short names: the first six letters and `~1`…`~4`, or git's hashed form.
    let six = &stem.as_bytes()[..6];
    let shortish = |prefix: &[u8]| {
        trimmed.len() == prefix.len() + 2
            && trimmed[..prefix.len()].eq_ignore_ascii_case(prefix)
            && trimmed[prefix.len()] == b'~'
            && (b'1'..=b'4').contains(&trimmed[prefix.len() + 1])
    };
    shortish(six) || (trimmed.len() >= 8 && trimmed[..6].eq_ignore_ascii_case(short.as_bytes()))
}

/// git's order of tree entries: names compared bytewise, a folder's as if
/// it ended in `/`.
fn tree_order(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> std::cmp::Ordering {
    let common = a.len().min(b.len());
    match a[..common].cmp(&b[..common]) {
        std::cmp::Ordering::Equal => {}
        other => return other,
    }
    let next = |name: &[u8], dir: bool| -> u8 {
        match name.get(common) {
            Some(&c) => c,
            None if dir => b'/',
            None => 0,
        }
    };
    next(a, a_dir).cmp(&next(b, b_dir))
}

/// Checks a commit's raw bytes as `git fsck` does; returns its tree and parents.
pub fn check_commit(id: Oid, data: &[u8]) -> Result<(Oid, Vec<Oid>), Violation> {
    let fail = |rule: Rule, line: &[u8]| Violation {
        object: id,
        kind: "commit",
        rule,
        detail: format!("{:?}", String::from_utf8_lossy(truncated(line))),
    };
    let header = header_of(data).ok_or_else(|| fail(Rule::UnterminatedHeader, b""))?;
    if header.contains(&0) {
        return Err(fail(Rule::NulInHeader, b""));
    }
    let mut lines = header.split(|&b| b == b'\n').peekable();
    let first = lines.next().unwrap_or_default();
    let tree = first
        .strip_prefix(b"tree ")
        .and_then(hex_id)
        .ok_or_else(|| fail(Rule::BadTreeSha1, first))?;
    let mut parents = Vec::new();
    while let Some(line) = lines.peek().copied().filter(|l| l.starts_with(b"parent ")) {
        lines.next();
        let parent = line
            .strip_prefix(b"parent ")
            .and_then(hex_id)
            .ok_or_else(|| fail(Rule::BadParentSha1, line))?;
        parents.push(parent);
    }
    let mut authors = 0;
    while let Some(line) = lines.peek().copied().filter(|l| l.starts_with(b"author ")) {
        lines.next();
        authors += 1;
        check_ident(&line[b"author ".len()..]).map_err(|()| fail(Rule::BadIdent, line))?;
    }
    match authors {
        0 => return Err(fail(Rule::MissingAuthor, b"")),
        1 => {}
        _ => return Err(fail(Rule::MultipleAuthors, b"")),
    }
    let committer = lines
        .next()
        .filter(|l| l.starts_with(b"committer "))
        .ok_or_else(|| fail(Rule::MissingCommitter, b""))?;
    check_ident(&committer[b"committer ".len()..]).map_err(|()| fail(Rule::BadIdent, committer))?;
    Ok((tree, parents))
}

/// Checks a tag's raw bytes as `git fsck` does; returns the object it names.
pub fn check_tag(id: Oid, data: &[u8]) -> Result<Oid, Violation> {
    let fail = |rule: Rule, line: &[u8]| Violation {
        object: id,
        kind: "tag",
        rule,
        detail: format!("{:?}", String::from_utf8_lossy(truncated(line))),
    };
    let header = header_of(data).ok_or_else(|| fail(Rule::UnterminatedHeader, b""))?;
    if header.contains(&0) {
        return Err(fail(Rule::NulInHeader, b""));
    }
    let mut lines = header.split(|&b| b == b'\n');
    let first = lines.next().unwrap_or_default();
    let object = first
        .strip_prefix(b"object ")
        .and_then(hex_id)
        .ok_or_else(|| fail(Rule::BadObjectSha1, first))?;
    let kind = lines.next().unwrap_or_default();
    if !matches!(
        kind.strip_prefix(b"type "),
        Some(b"commit" | b"tree" | b"blob" | b"tag")
    ) {
        return Err(fail(Rule::BadType, kind));
    }
    let name = lines.next().unwrap_or_default();
    if !name.starts_with(b"tag ") {
        return Err(fail(Rule::MissingTagEntry, name));
    }
    if let Some(tagger) = lines.next().filter(|l| l.starts_with(b"tagger ")) {
        check_ident(&tagger[b"tagger ".len()..]).map_err(|()| fail(Rule::BadIdent, tagger))?;
    }
    Ok(object)
}

/// The header of a commit or tag: everything before the first blank line
/// (or all of it, when the object has no message). `None` when the last
/// header line is not terminated.
fn header_of(data: &[u8]) -> Option<&[u8]> {
    if let Some(at) = data.windows(2).position(|w| w == b"\n\n") {
        return Some(&data[..at]);
    }
    data.strip_suffix(b"\n")
}

fn truncated(line: &[u8]) -> &[u8] {
    &line[..line.len().min(80)]
}

/// 40 lowercase hex digits, as git writes ids in headers.
fn hex_id(hex: &[u8]) -> Option<Oid> {
    if hex.len() != 40
        || !hex
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return None;
    }
    Oid::from_str(std::str::from_utf8(hex).ok()?).ok()
}

/// `Name <email> seconds +zone`, by git's `fsck_ident`.
fn check_ident(ident: &[u8]) -> Result<(), ()> {
    if ident.first() == Some(&b'<') {
        return Err(());
    }
    let open = ident.iter().position(|b| matches!(b, b'<' | b'>' | b'\n'));
    let open = match open {
        Some(at) if ident[at] == b'<' => at,
        _ => return Err(()),
    };
    if open == 0 || ident[open - 1] != b' ' {
        return Err(());
    }
    let rest = &ident[open + 1..];
    let close = rest
        .iter()
        .position(|b| matches!(b, b'<' | b'>' | b'\n'))
        .filter(|&at| rest[at] == b'>')
        .ok_or(())?;
    let rest = rest[close + 1..].strip_prefix(b" ").ok_or(())?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || (rest[0] == b'0' && digits > 1) || digits > 19 {
        return Err(());
    }
    let zone = rest[digits..].strip_prefix(b" ").ok_or(())?;
    if zone.len() != 5
        || !matches!(zone[0], b'+' | b'-')
        || !zone[1..].iter().all(u8::is_ascii_digit)
    {
        return Err(());
    }
    Ok(())
}

/// Checks a `.gitmodules` blob as `git fsck` does: a config file whose
/// submodule names stay inside `.git/modules`, whose urls and paths cannot
/// be taken for options, and whose `update` names no command.
pub fn check_gitmodules(id: Oid, data: &[u8]) -> Result<(), Violation> {
    let fail = |rule: Rule, detail: String| Violation {
        object: id,
        kind: "blob",
        rule,
        detail,
    };
    if data.len() > GITMODULES_LIMIT {
        return Err(fail(Rule::GitmodulesLarge, format!("{} bytes", data.len())));
    }
    let entries = super::config_text::parse(data)
        .map_err(|line| fail(Rule::GitmodulesParse, format!(".gitmodules line {line}")))?;
    for entry in entries {
        if !entry.section.eq_ignore_ascii_case("submodule") {
            continue;
        }
        let Some(name) = entry.subsection.as_deref() else {
            continue;
        };
        if name.is_empty() || name.contains('\0') || name.split(['/', '\\']).any(|c| c == "..") {
            return Err(fail(
                Rule::GitmodulesName,
                format!("submodule name {name:?}"),
            ));
        }
        let value = entry.value.as_deref().unwrap_or_default();
        match entry.key.to_ascii_lowercase().as_str() {
            "url" if value.starts_with('-') || url_smuggles_a_line(value) => {
                return Err(fail(Rule::GitmodulesUrl, format!("url {value:?}")));
            }
            "path" if value.starts_with('-') => {
                return Err(fail(Rule::GitmodulesPath, format!("path {value:?}")));
            }
            "update" if value.starts_with('!') => {
                return Err(fail(Rule::GitmodulesUpdate, format!("update {value:?}")));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A url that holds a newline, or a percent-encoded one (git's credential
/// protocol would read it as a second line).
fn url_smuggles_a_line(url: &str) -> bool {
    if url.contains('\n') || url.contains('\r') {
        return true;
    }
    let bytes = url.as_bytes();
    bytes.windows(3).any(|w| {
        w[0] == b'%'
            && std::str::from_utf8(&w[1..])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .is_some_and(|b| b == b'\n' || b == b'\r' || b == 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(mode: &str, name: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(mode.as_bytes());
        out.push(b' ');
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(&[7u8; 20]);
        out
    }

    fn tree(entries: &[(&str, &[u8])]) -> Vec<u8> {
        entries.iter().flat_map(|(m, n)| entry(m, n)).collect()
    }

    fn rule_of(data: &[u8]) -> Option<Rule> {
        check_tree(Oid::ZERO_SHA1, data).err().map(|v| v.rule)
    }

    #[test]
    fn every_name_git_refuses_is_refused() {
        let cases: &[(&[u8], Rule)] = &[
            (b".git", Rule::HasDotgit),
            (b".GIT", Rule::HasDotgit),
            (b".Git", Rule::HasDotgit),
            (b".git.", Rule::HasDotgit),
            (b".git ", Rule::HasDotgit),
            (b"git~1", Rule::HasDotgit),
            (b"GIT~1", Rule::HasDotgit),
            (".g\u{200c}it".as_bytes(), Rule::HasDotgit),
            (".gi\u{feff}t".as_bytes(), Rule::HasDotgit),
            (b".git::$INDEX_ALLOCATION", Rule::HasDotgit),
            (b"..", Rule::HasDotdot),
            (b".", Rule::HasDot),
            (b"a/b", Rule::FullPathname),
            (b"../x", Rule::FullPathname),
            (b"", Rule::EmptyName),
        ];
        for (name, rule) in cases {
            assert_eq!(
                rule_of(&tree(&[("100644", name)])),
                Some(*rule),
                "{:?}",
                String::from_utf8_lossy(name)
            );
        }
        // Names git takes are taken.
        for name in [
            &b".gitignore"[..],
            b"git",
            b".github",
            b"a.git",
            b"a:b",
            b"back\\slash",
        ] {
            assert_eq!(rule_of(&tree(&[("100644", name)])), None, "{name:?}");
        }
    }

    #[test]
    fn symlinks_named_like_git_control_files_are_refused() {
        for (name, rule) in [
            (&b".gitmodules"[..], Rule::GitmodulesSymlink),
            (b".GITMODULES", Rule::GitmodulesSymlink),
            (b"gitmod~1", Rule::GitmodulesSymlink),
            (b".gitattributes", Rule::GitattributesSymlink),
            (b".gitignore", Rule::GitignoreSymlink),
            (b".mailmap", Rule::MailmapSymlink),
        ] {
            assert_eq!(rule_of(&tree(&[("120000", name)])), Some(rule), "{name:?}");
        }
        assert_eq!(
            rule_of(&tree(&[("40000", b".gitmodules")])),
            Some(Rule::GitmodulesBlob)
        );
        let ok = check_tree(Oid::ZERO_SHA1, &tree(&[("100644", b".gitmodules")])).expect("ok");
        assert!(ok[0].gitmodules);
    }

    #[test]
    fn modes_order_and_duplicates_follow_git() {
        assert_eq!(
            rule_of(&tree(&[("040000", b"d")])),
            Some(Rule::ZeroPaddedFilemode)
        );
        assert_eq!(rule_of(&tree(&[("100664", b"f")])), Some(Rule::BadFilemode));
        assert_eq!(
            rule_of(&tree(&[("777777777777", b"f")])),
            Some(Rule::BadFilemode)
        );
        assert_eq!(rule_of(&tree(&[("10x644", b"f")])), Some(Rule::BadTree));
        assert_eq!(
            rule_of(&tree(&[("100644", b"b"), ("100644", b"a")])),
            Some(Rule::TreeNotSorted)
        );
        assert_eq!(
            rule_of(&tree(&[("100644", b"a"), ("100644", b"a")])),
            Some(Rule::DuplicateEntries)
        );
        // A file `a` and a folder `a` are one name twice, however they sort.
        assert_eq!(
            rule_of(&tree(&[
                ("100644", b"a"),
                ("100644", b"a.c"),
                ("40000", b"a")
            ])),
            Some(Rule::DuplicateEntries)
        );
        // git's order: the folder `a` sorts as `a/`, after `a.c`.
        assert_eq!(rule_of(&tree(&[("100644", b"a.c"), ("40000", b"a")])), None);
        assert_eq!(
            rule_of(&tree(&[("40000", b"a"), ("100644", b"a.c")])),
            Some(Rule::TreeNotSorted)
        );
        let mut zero = entry("100644", b"z");
        let len = zero.len();
        zero[len - 20..].fill(0);
        assert_eq!(rule_of(&zero), Some(Rule::NullSha1));
        assert_eq!(rule_of(b"100644 short\0abc"), Some(Rule::BadTree));
    }

    const TREE: &str = "tree 0123456789abcdef0123456789abcdef01234567\n";
    const WHO: &str = "A U Thor <a@example.com> 1700000000 +0100";

    fn commit(text: &str) -> Option<Rule> {
        check_commit(Oid::ZERO_SHA1, text.as_bytes())
            .err()
            .map(|v| v.rule)
    }

    #[test]
    fn commits_need_a_tree_an_author_and_a_committer() {
        let good = format!("{TREE}author {WHO}\ncommitter {WHO}\n\nmsg\n");
        assert_eq!(commit(&good), None);
        assert_eq!(
            commit(&format!("{TREE}author {WHO}\ncommitter {WHO}\n")),
            None
        );
        assert_eq!(
            commit(&format!("author {WHO}\ncommitter {WHO}\n\nm")),
            Some(Rule::BadTreeSha1)
        );
        assert_eq!(
            commit(&format!(
                "{TREE}parent nothex\nauthor {WHO}\ncommitter {WHO}\n\nm"
            )),
            Some(Rule::BadParentSha1)
        );
        assert_eq!(
            commit(&format!("{TREE}committer {WHO}\n\nm")),
            Some(Rule::MissingAuthor)
        );
        assert_eq!(
            commit(&format!(
                "{TREE}author {WHO}\nauthor {WHO}\ncommitter {WHO}\n\nm"
            )),
            Some(Rule::MultipleAuthors)
        );
        assert_eq!(
            commit(&format!("{TREE}author {WHO}\n\nm")),
            Some(Rule::MissingCommitter)
        );
        assert_eq!(
            commit(&format!("{TREE}author {WHO}\ncommitter {WHO}\nx \0y\n\nm")),
            Some(Rule::NulInHeader)
        );
        assert_eq!(
            commit(&format!("{TREE}author {WHO}\ncommitter {WHO}")),
            Some(Rule::UnterminatedHeader)
        );
        for bad in [
            "<a@example.com> 1 +0000",
            "Name a@example.com> 1 +0000",
            "Name<a@example.com> 1 +0000",
            "Name <a@example.com 1 +0000",
            "Name <a@example.com>1 +0000",
            "Name <a@example.com> 01 +0000",
            "Name <a@example.com> 1 0000",
            "Name <a@example.com> 1 +00",
            "Name <a@example.com> x +0000",
        ] {
            assert_eq!(
                commit(&format!("{TREE}author {bad}\ncommitter {WHO}\n\nm")),
                Some(Rule::BadIdent),
                "{bad}"
            );
        }
    }

    #[test]
    fn tags_name_an_object_a_type_and_a_name() {
        let tag = |t: &str| {
            check_tag(Oid::ZERO_SHA1, t.as_bytes())
                .err()
                .map(|v| v.rule)
        };
        let obj = "object 0123456789abcdef0123456789abcdef01234567\n";
        assert_eq!(
            tag(&format!("{obj}type commit\ntag v1\ntagger {WHO}\n\nm")),
            None
        );
        assert_eq!(tag(&format!("{obj}type commit\ntag v1\n\nm")), None);
        assert_eq!(
            tag("object xyz\ntype commit\ntag v1\n\nm"),
            Some(Rule::BadObjectSha1)
        );
        assert_eq!(
            tag(&format!("{obj}type bogus\ntag v1\n\nm")),
            Some(Rule::BadType)
        );
        assert_eq!(
            tag(&format!("{obj}type commit\n\nm")),
            Some(Rule::MissingTagEntry)
        );
        assert_eq!(
            tag(&format!("{obj}type commit\ntag v1\ntagger nobody\n\nm")),
            Some(Rule::BadIdent)
        );
    }

    #[test]
    fn gitmodules_that_git_refuses_are_refused() {
        let check = |t: &str| {
            check_gitmodules(Oid::ZERO_SHA1, t.as_bytes())
                .err()
                .map(|v| v.rule)
        };
        assert_eq!(
            check("[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n"),
            None
        );
        assert_eq!(
            check("[submodule \"../../x\"]\n\tpath = x\n"),
            Some(Rule::GitmodulesName)
        );
        assert_eq!(
            check("[submodule \"a/../b\"]\n\tpath = x\n"),
            Some(Rule::GitmodulesName)
        );
        assert_eq!(
            check("[submodule \"\"]\n\tpath = x\n"),
            Some(Rule::GitmodulesName)
        );
        assert_eq!(
            check("[submodule \"x\"]\n\turl = --upload-pack=touch /tmp/pwned\n"),
            Some(Rule::GitmodulesUrl)
        );
        assert_eq!(
            check("[submodule \"x\"]\n\turl = https://a%0ahost=evil.com/x\n"),
            Some(Rule::GitmodulesUrl)
        );
        assert_eq!(
            check("[submodule \"x\"]\n\tpath = -x\n"),
            Some(Rule::GitmodulesPath)
        );
        assert_eq!(
            check("[submodule \"x\"]\n\tupdate = !touch /tmp/pwned\n"),
            Some(Rule::GitmodulesUpdate)
        );
        assert_eq!(
            check("[Submodule \"x\"]\n\tUPDATE = \"!sh\"\n"),
            Some(Rule::GitmodulesUpdate)
        );
        assert_eq!(check("[submodule \"x\"\n"), Some(Rule::GitmodulesParse));
        let large = "#".repeat(GITMODULES_LIMIT + 1);
        assert_eq!(check(&large), Some(Rule::GitmodulesLarge));
    }
}
