//! Directory names for worktrees: an injective, path-safe encoding of the branch.

/// The directory (and libgit2 worktree) name for `branch`: a readable slug
/// plus a hash of the exact branch name, so `feat/x` and `feat-x` never share
/// a directory and the name can never contain `/` or be `.`/`..`.
pub fn dir_name(branch: &str) -> String {
    let mut slug: String = branch
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    slug = slug.trim_matches(|c| c == '.' || c == '-').to_owned();
    slug.truncate(48);
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, branch.as_bytes())
        .map(|oid| oid.to_string())
        .unwrap_or_else(|_| "0".repeat(40));
    if slug.is_empty() {
        format!("wt-{}", &hash[..10])
    } else {
        format!("{slug}-{}", &hash[..10])
    }
}

#[cfg(test)]
mod tests {
    use super::dir_name;

    #[test]
    fn lookalike_branches_get_distinct_directories() {
        assert_ne!(dir_name("feat/x"), dir_name("feat-x"));
        assert_ne!(dir_name("a/b/c"), dir_name("a-b/c"));
        assert!(dir_name("feat/x").starts_with("feat-x-"));
    }

    #[test]
    fn names_stay_inside_the_worktrees_folder() {
        for branch in ["../../etc", "..", ".x", "a/../../b", "-", "..."] {
            let name = dir_name(branch);
            assert!(!name.contains('/'), "{name}");
            assert!(name != "." && name != "..", "{name}");
            assert!(!name.starts_with('.'), "{name}");
        }
    }
}
