//! The `slipway` command line: parses arguments and hands them to the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
