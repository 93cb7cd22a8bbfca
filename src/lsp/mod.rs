//! `slipway lsp`: the editor sidecar. JSON-RPC 2.0 over stdio with LSP framing
//! (tower-lsp-server). This module only translates between the protocol and
//! the core; see docs/protocol.md.
// One stray `println!` would corrupt the protocol on stdout.
#![deny(clippy::print_stdout)]

mod commands;
mod detach;
mod framing;
pub mod protocol;
mod server;
mod state;
mod status_cache;

use std::path::Path;

use tower_lsp_server::{LspService, Server};

pub use server::SlipwayServer;

/// Serves the protocol on stdin/stdout until the client sends `exit` or closes stdin.
/// Logs go to stderr or `log_file`, never to stdout.
pub fn serve_stdio(log_file: Option<&Path>) -> std::io::Result<()> {
    init_logging(log_file)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let (service, socket) = LspService::build(SlipwayServer::new)
            .custom_method(
                "window/workDoneProgress/cancel",
                SlipwayServer::progress_cancel,
            )
            .custom_method(framing::PARSE_ERROR_METHOD, SlipwayServer::parse_error)
            .finish();
        let (frames_in, frames_out) = tokio::io::duplex(1 << 20);
        tokio::spawn(framing::filter(tokio::io::stdin(), frames_in));
        Server::new(frames_out, tokio::io::stdout(), socket)
            .concurrency_level(32)
            .serve(service)
            .await;
    });
    // Blocking readers of stdin and pending git work must not hold the exit.
    runtime.shutdown_background();
    Ok(())
}

fn init_logging(log_file: Option<&Path>) -> std::io::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SLIPWAY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false);
    let result = match log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            builder.with_writer(std::sync::Mutex::new(file)).try_init()
        }
        None => builder.with_writer(std::io::stderr).try_init(),
    };
    // A subscriber set earlier in the process is fine.
    let _ = result;
    Ok(())
}
