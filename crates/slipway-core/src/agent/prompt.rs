//! Prompts. An inline prompt is literal. A prompt file is a template:
//! `{{NAME}}` from user arguments, the built-ins `{{SOURCE_BRANCH}}` and
//! `{{TARGET_BRANCH}}`, and `` !`cmd` `` blocks that run in the sandbox and are
//! replaced by their output. Blocks are found in the template text only, before
//! any substitution, so an argument value can never smuggle in a command.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Names the template gets from slipway and a user may not override.
pub const BUILT_INS: [&str; 2] = ["SOURCE_BRANCH", "TARGET_BRANCH"];

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Var(String),
    Shell(String),
}

/// Where a prompt comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "camelCase")]
pub enum PromptSource {
    /// Used exactly as given.
    Inline(String),
    /// A template file.
    File(PathBuf),
}

/// A parsed prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    segments: Vec<Segment>,
}

/// A prompt that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The prompt file could not be read.
    #[error("cannot read prompt file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The template uses arguments that were not given.
    #[error("the prompt template needs {}", missing.join(", "))]
    MissingArgs { missing: Vec<String> },
    /// An argument tries to replace a built-in.
    #[error("{name} is built in and cannot be set as a prompt argument")]
    BuiltInOverride { name: String },
    /// A `` !` `` block that never closes.
    #[error("the prompt template has a !` block that is never closed with `")]
    UnclosedShell,
    /// Arguments given to an inline prompt.
    #[error("prompt arguments only apply to a prompt file; an inline prompt is used literally")]
    ArgsWithInline,
    /// No prompt at all.
    #[error("no prompt given")]
    Missing,
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Prompt {
    /// A literal prompt: nothing in it is interpreted.
    pub fn literal(text: &str) -> Prompt {
        Prompt {
            segments: vec![Segment::Text(text.to_owned())],
        }
    }

    /// Parses template text.
    pub fn template(text: &str) -> Result<Prompt, PromptError> {
        let mut segments = Vec::new();
        let mut text_buf = String::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("!`") {
                let end = after.find('`').ok_or(PromptError::UnclosedShell)?;
                if !text_buf.is_empty() {
                    segments.push(Segment::Text(std::mem::take(&mut text_buf)));
                }
                segments.push(Segment::Shell(after[..end].to_owned()));
                rest = &after[end + 1..];
                continue;
            }
            if let Some(after) = rest.strip_prefix("{{")
                && let Some(end) = after.find("}}")
            {
                let name = after[..end].trim();
                if is_name(name) {
                    if !text_buf.is_empty() {
                        segments.push(Segment::Text(std::mem::take(&mut text_buf)));
                    }
                    segments.push(Segment::Var(name.to_owned()));
                    rest = &after[end + 2..];
                    continue;
                }
            }
            let ch = rest.chars().next().expect("rest is not empty");
            text_buf.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
        if !text_buf.is_empty() {
            segments.push(Segment::Text(text_buf));
        }
        Ok(Prompt { segments })
    }

    /// Checks user arguments against the template before anything runs.
    /// Returns warnings for arguments the template never uses.
    pub fn check_args(&self, args: &BTreeMap<String, String>) -> Result<Vec<String>, PromptError> {
        if let Some(name) = args.keys().find(|k| BUILT_INS.contains(&k.as_str())) {
            return Err(PromptError::BuiltInOverride { name: name.clone() });
        }
        let used: Vec<&str> = self
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Var(v) => Some(v.as_str()),
                _ => None,
            })
            .collect();
        let mut missing: Vec<String> = used
            .iter()
            .filter(|v| !BUILT_INS.contains(v) && !args.contains_key(**v))
            .map(|v| (*v).to_owned())
            .collect();
        missing.sort();
        missing.dedup();
        if !missing.is_empty() {
            return Err(PromptError::MissingArgs { missing });
        }
        Ok(args
            .keys()
            .filter(|k| !used.contains(&k.as_str()))
            .map(|k| format!("prompt argument {k} is not used by the template"))
            .collect())
    }

    /// The `` !`cmd` `` blocks, in order.
    pub fn shell_blocks(&self) -> Vec<String> {
        self.segments
            .iter()
            .filter_map(|s| match s {
                Segment::Shell(cmd) => Some(cmd.clone()),
                _ => None,
            })
            .collect()
    }

    /// The final prompt: variables replaced by `values` (inserted literally),
    /// shell blocks by `shell_outputs` in order.
    pub fn render(&self, values: &BTreeMap<String, String>, shell_outputs: &[String]) -> String {
        let mut out = String::new();
        let mut outputs = shell_outputs.iter();
        for segment in &self.segments {
            match segment {
                Segment::Text(t) => out.push_str(t),
                Segment::Var(v) => match values.get(v) {
                    Some(value) => out.push_str(value),
                    None => {
                        out.push_str("{{");
                        out.push_str(v);
                        out.push_str("}}");
                    }
                },
                Segment::Shell(_) => {
                    if let Some(o) = outputs.next() {
                        out.push_str(o.trim_end_matches('\n'));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn inline_prompts_are_literal() {
        let p = Prompt::literal("fix {{ISSUE}} and !`rm -rf /`");
        assert!(p.shell_blocks().is_empty());
        assert_eq!(
            p.render(&args(&[("ISSUE", "x")]), &[]),
            "fix {{ISSUE}} and !`rm -rf /`"
        );
    }

    #[test]
    fn templates_substitute_and_run_only_their_own_blocks() {
        let p = Prompt::template("Fix {{ISSUE}} on {{SOURCE_BRANCH}}.\nLog: !`git log -1`\n")
            .expect("parses");
        assert_eq!(p.shell_blocks(), vec!["git log -1".to_owned()]);
        let mut values = args(&[("ISSUE", "!`touch pwned`")]);
        values.insert("SOURCE_BRANCH".into(), "agent/x".into());
        let text = p.render(&values, &["abc123 subject\n".to_owned()]);
        assert_eq!(
            text,
            "Fix !`touch pwned` on agent/x.\nLog: abc123 subject\n"
        );
    }

    #[test]
    fn missing_unused_and_builtin_arguments() {
        let p = Prompt::template("{{A}} {{B}} {{TARGET_BRANCH}}").expect("parses");
        let err = p
            .check_args(&args(&[("A", "1")]))
            .expect_err("B is missing");
        assert!(
            matches!(err, PromptError::MissingArgs { ref missing } if missing == &["B".to_owned()])
        );
        let warnings = p
            .check_args(&args(&[("A", "1"), ("B", "2"), ("C", "3")]))
            .expect("ok");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains('C'));
        assert!(matches!(
            p.check_args(&args(&[("A", "1"), ("B", "2"), ("SOURCE_BRANCH", "x")])),
            Err(PromptError::BuiltInOverride { .. })
        ));
    }

    #[test]
    fn unclosed_block_is_an_error() {
        assert!(matches!(
            Prompt::template("run !`ls"),
            Err(PromptError::UnclosedShell)
        ));
    }
}
