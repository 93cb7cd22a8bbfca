//! The `slipway` command line and editor sidecar: both translate arguments and
//! results for `slipway-core`, which holds the logic.

mod cli;
mod lsp;

fn main() -> std::process::ExitCode {
    cli::main()
}
