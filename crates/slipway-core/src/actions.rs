//! What the user can do next, as slipway commands: every result and error
//! carries a list of [`Action`]s, and each edge words them its own way (the
//! command line as `slipway …` commands, the editors as buttons). Advice
//! never names a raw git command that would go around slipway's records.

use serde::{Deserialize, Serialize};

/// Which slipway command an action is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ActionKind {
    /// Look at what a worktree (or a kept branch) holds.
    Review,
    /// Bring its branch into a host branch.
    Land,
    /// Remove the worktree and its branch.
    Discard,
    /// Remove the worktree, keeping its branch.
    Close,
    /// Answer a run that asked a question.
    Reply,
    /// Approve a repository's `slipway.toml`.
    Trust,
}

impl ActionKind {
    /// The name the protocol uses.
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Review => "review",
            ActionKind::Land => "land",
            ActionKind::Discard => "discard",
            ActionKind::Close => "close",
            ActionKind::Reply => "reply",
            ActionKind::Trust => "trust",
        }
    }
}

/// One thing the user can do next.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// Which command.
    pub kind: ActionKind,
    /// The worktree (or kept branch) it acts on, as a selector the review
    /// commands accept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The run it acts on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A close or discard that would lose what the answer listed as at risk
    /// (the user has to confirm it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

impl Action {
    /// An action on a worktree or kept branch.
    pub fn on(kind: ActionKind, worktree: &str) -> Action {
        Action {
            kind,
            worktree: Some(worktree.to_owned()),
            run_id: None,
            force: false,
        }
    }

    /// The same action, losing what is at risk.
    pub fn forced(mut self) -> Action {
        self.force = true;
        self
    }
}

/// What can be done with work that is not home yet: look at it, land it, or
/// throw it away (which loses it).
pub fn unlanded(worktree: &str) -> Vec<Action> {
    vec![
        Action::on(ActionKind::Review, worktree),
        Action::on(ActionKind::Land, worktree),
        Action::on(ActionKind::Discard, worktree).forced(),
    ]
}

/// What can be done with a worktree kept because of uncommitted changes:
/// look at it, or close it losing them.
pub fn uncommitted(worktree: &str) -> Vec<Action> {
    vec![
        Action::on(ActionKind::Review, worktree),
        Action::on(ActionKind::Close, worktree).forced(),
    ]
}

/// An answer with what to do next beside its own fields.
#[derive(Debug, Clone, Serialize)]
pub struct WithActions<T> {
    /// The answer itself.
    #[serde(flatten)]
    pub answer: T,
    /// What to do next.
    pub actions: Vec<Action>,
}
