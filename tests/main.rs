//! Every integration test of slipway, as modules of one test binary: one
//! link and one run for the whole suite. Each module is a topic; the safety
//! rules of DESIGN.md section 2 each have a module named after them.

mod common;

mod activity;
mod agent_runs;
mod agents;
mod attempt_views;
mod attempts;
mod branches;
mod budgets;
mod checkout;
mod cli_progress;
mod commit_summaries;
mod concurrency;
mod containers_are_hardened;
mod copy_in;
mod crash_safety;
mod docker_image;
mod docker_isolated;
mod docker_long_lived;
mod docker_runs;
mod docker_sandbox;
mod edges_agree;
mod engines;
mod every_git_file_is_checked;
mod host_git_runs_no_repo_programs;
mod host_writes_are_all_or_nothing;
mod import_checks_every_object;
mod join_with_real_agents;
mod lsp_bad_input;
mod lsp_commands;
mod lsp_runs;
mod no_data_loss;
mod processes;
mod questions;
mod real_agents;
mod real_streams;
mod records_are_not_paths;
mod repository_config_needs_trust;
mod review_and_land;
mod rootless_podman;
mod run_cannot_write_the_host_git;
mod run_news;
mod runs;
mod sandbox_text_is_shown_not_obeyed;
mod snapshots;
mod source_policy;
mod strategies;
mod user_keeps_working;
mod workspace_files;
mod workspace_launch;
mod worktree_lifecycle;
