//! Runs that end asking the user: how a question is recognised in what the
//! agent reported, and what a reply needs to carry the same session on.
//!
//! A run ends `needsInput` when its last iteration ended without an error
//! and without a completion signal, and one of these holds:
//! - the agent reported a permission it was denied (Claude Code's
//!   `permission_denials` in its `result` event; a Codex command whose item
//!   completed `declined`);
//! - the agent called its tool for asking the user (Claude Code's
//!   `AskUserQuestion`), which nobody answers in an unattended run;
//! - its final answer asks the user: see [`asks_user`].

use serde::{Deserialize, Serialize};

use super::{Budgets, RunStrategy, SandboxSpec, Timeouts};
use crate::agent::AgentSpec;
use crate::ids::{RunId, SandboxId, WorktreeId};

/// Why a run ended waiting for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QuestionReason {
    /// The final answer asks the user something.
    Asked,
    /// The agent was denied a permission it asked for.
    PermissionDenied,
    /// The agent called its tool for asking the user.
    WaitingForInput,
}

/// The question a `needsInput` run ends with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// What the agent asks, in its words (or the permission it was denied).
    pub text: String,
    /// How it was recognised.
    pub reason: QuestionReason,
    /// The session a reply resumes (`None` for the `command` agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// The longest question kept; the rest is cut with an ellipsis.
const QUESTION_CHARS: usize = 2000;

/// The question `text` (an agent's final answer) puts to the user, if any.
///
/// Conservative on purpose: a run that is done must not wait for a reply.
/// The rule: the last paragraph of the text (lines after the last blank
/// line, outside a code block) ends with `?` (after closing quotes, brackets
/// or emphasis), and addresses the user: it has the word "you" or "your",
/// or asks leave ("should I", "shall I", "may I", "can I", "do I", "would
/// it", "let me know"). "Did the tests pass?" alone is not a question to
/// the user.
pub fn asks_user(text: &str) -> Option<String> {
    let text = text.trim_end();
    if text.ends_with("```") {
        return None;
    }
    let last = text
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .last()?;
    let bare = last.trim_end_matches(['*', '_', '"', '\'', ')', ']', '`', ' ', '\u{201d}']);
    if !bare.ends_with('?') {
        return None;
    }
    let lower = last.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let second_person = words
        .iter()
        .any(|w| matches!(*w, "you" | "your" | "yours" | "you'd" | "you're"));
    let leave = words.windows(2).any(|pair| {
        matches!(
            (pair[0], pair[1]),
            (
                "should" | "shall" | "may" | "can" | "do" | "could",
                "i" | "we"
            ) | ("would", "it")
                | ("let", "me")
        )
    });
    (second_person || leave).then(|| crate::agent::cut(last, QUESTION_CHARS))
}

/// What a reply to a `needsInput` run needs from it: the agent (its options
/// and program), the sandbox, and where it worked. Kept in the run record;
/// read back only from a record of a trusted `.slipway/`, its ids typed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resumable {
    /// The agent as the run had it (without its `resume`: the reply sets it).
    pub agent: AgentSpec,
    /// The sandbox it ran in.
    pub sandbox: SandboxSpec,
    /// The strategy (`head`, or the worktree's).
    pub strategy: RunStrategy,
    /// The worktree it worked in, kept for the reply (`None` for `head`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeId>,
    /// The run (or the one it replied to) made that worktree: the reply
    /// finishes it as the strategy says (merge-to-head closes it).
    #[serde(default)]
    pub owns_worktree: bool,
    /// The long-lived sandbox it ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_id: Option<SandboxId>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Budgets.
    #[serde(default)]
    pub budgets: Budgets,
    /// Completion signals.
    #[serde(default)]
    pub completion_signals: Vec<String>,
    /// The hooks run in the sandbox before the agent (a new sandbox needs
    /// them again; the worktree's own hooks ran when it was made).
    #[serde(default)]
    pub sandbox_hooks: Vec<String>,
    /// The check after the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

/// A run that answers an earlier one's question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplyLink {
    /// The run whose question this answers.
    pub previous: RunId,
    /// The chain made the worktree: finish it as a run that made it would.
    #[serde(default)]
    pub owns_worktree: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_question_to_the_user_is_one() {
        let q = asks_user(
            "I added the parser.\n\nShould I also update the README, or do you want it as is?",
        );
        assert_eq!(
            q.as_deref(),
            Some("Should I also update the README, or do you want it as is?")
        );
        assert!(asks_user("Which port do you want the server on? **").is_some());
        assert!(asks_user("Done.\n\nLet me know: keep the old flag?").is_some());
    }

    #[test]
    fn other_endings_are_not_questions() {
        assert!(
            asks_user("All done: hello.txt is committed. <promise>COMPLETE</promise>").is_none()
        );
        assert!(asks_user("Why did the test fail? The fixture was stale; fixed.").is_none());
        assert!(
            asks_user("Did the tests pass?").is_none(),
            "not to the user"
        );
        assert!(asks_user("Do you want this?\n```\nfn x() {}\n```").is_none());
        assert!(asks_user("").is_none());
    }
}
