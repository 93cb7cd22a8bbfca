//! slipway-core: private git worktrees and sandboxes for AI coding agents.
//!
//! This crate holds all the logic and knows nothing of the protocol or the
//! command line; the `slipway` binary's `cli` and `lsp` modules only translate
//! arguments and results.
#![deny(clippy::print_stdout)]

pub mod actions;
pub mod agent;
pub mod attempts;
pub mod engines;
pub mod error;
pub mod git;
pub mod ids;
pub mod journal;
pub mod nofollow;
pub mod parallel;
pub mod plan;
pub mod process_id;
pub mod recovery;
pub mod review;
pub mod run;
pub mod sandbox;
pub mod shown;
pub mod state_trust;
pub mod testhook;
pub mod trust;
pub mod util;
pub mod workspace;
pub mod worktree;
