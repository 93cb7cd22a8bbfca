//! slipway: private git worktrees and sandboxes for AI coding agents.
//!
//! The library holds all the logic; the CLI (`src/main.rs`) and the sidecar
//! only translate arguments and results.
#![deny(clippy::print_stdout)]

pub mod agent;
pub mod git;
pub mod lsp;
pub mod run;
pub mod sandbox;
pub mod util;
pub mod workspace;
pub mod worktree;
