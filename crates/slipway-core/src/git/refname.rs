//! Branch-name validation by git's ref-name rules.

/// Why a branch name was refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "'{name}' is not a valid branch name: {why}; use letters, digits, '-', '_', '.' and '/' (not at the start or end, no '..')"
)]
pub struct InvalidBranchName {
    /// The refused name.
    pub name: String,
    /// Which rule it broke.
    pub why: &'static str,
}

/// Checks `name` against git's rules for branch names (`git check-ref-format --branch`).
pub fn validate_branch_name(name: &str) -> Result<(), InvalidBranchName> {
    let fail = |why| {
        Err(InvalidBranchName {
            name: name.to_owned(),
            why,
        })
    };
    if name.is_empty() {
        return fail("it is empty");
    }
    if name.starts_with('-') {
        return fail("it starts with '-'");
    }
    if name == "HEAD" || name == "@" || name.starts_with("refs/") {
        return fail("it names a ref, not a branch");
    }
    if name.split('/').any(|part| part.len() > 200) || name.len() > 1000 {
        return fail("it is too long (at most 200 bytes between slashes, 1000 in all)");
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return fail("it contains whitespace or a control character");
    }
    if !git2::Reference::is_valid_name(&format!("refs/heads/{name}")) {
        return fail("git's ref-name rules refuse it");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::validate_branch_name;

    #[test]
    fn accepts_ordinary_names() {
        for ok in ["main", "feat/x", "agent/fix-42", "v1.2", "a_b"] {
            assert!(validate_branch_name(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_what_git_refuses() {
        for bad in [
            "",
            "-x",
            "a..b",
            "a b",
            "x.lock",
            "/x",
            "x/",
            "a//b",
            "a~b",
            "a^b",
            "a:b",
            "a?b",
            "a*b",
            "a[b",
            "a\\b",
            "@{x",
            "HEAD",
            ".x",
            "x/.y",
            "refs/heads/x",
            "@",
        ] {
            assert!(
                validate_branch_name(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
    }
}
