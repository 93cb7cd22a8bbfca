//! `slipway lsp`: the editor sidecar. JSON-RPC 2.0 over stdio with LSP framing
//! (tower-lsp-server). This module only translates between the protocol and
//! the core; see docs/protocol.md.
// One stray `println!` would corrupt the protocol on stdout.
#![deny(clippy::print_stdout)]

mod commands;
mod detach;
mod framing;
mod front;
mod lifecycle;
mod memory;
mod nesting;
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
    memory::limit_arenas();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let state = state::State::new();
        let server_state = state.clone();
        let (service, socket) =
            LspService::build(move |client| SlipwayServer::new(client, server_state.clone()))
                .custom_method(
                    "window/workDoneProgress/cancel",
                    SlipwayServer::progress_cancel,
                )
                .finish();
        let output = front::Output::new(tokio::io::stdout());
        let lifecycle = std::sync::Arc::new(lifecycle::Lifecycle::new());
        let (to_server, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, from_server) = tokio::io::duplex(1 << 20);
        tokio::spawn(front::read_client(
            tokio::io::stdin(),
            to_server,
            output.clone(),
            state,
            lifecycle.clone(),
        ));
        let writer = tokio::spawn(front::write_server(from_server, output, lifecycle));
        Server::new(server_in, server_out, socket)
            .concurrency_level(32)
            .serve(service)
            .await;
        // The server's last answers (to `shutdown`) are still in the pipe.
        if tokio::time::timeout(std::time::Duration::from_secs(2), writer)
            .await
            .is_err()
        {
            tracing::warn!("the last answers were not all written within 2 s");
        }
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
