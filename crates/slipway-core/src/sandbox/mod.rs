//! Where the agent process runs. Every provider starts processes, streams
//! their output as lines, reports the exit code and kills the whole process
//! tree on demand.

pub mod docker;
pub mod host;
pub mod image;
pub mod isolated;
pub mod lines;
pub mod mapped;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

/// A boxed future, so providers can be used behind `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A process to start inside a sandbox.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment (never placed on a command line).
    pub env: Vec<(String, String)>,
    /// Bytes written to stdin, which is then closed; `None` gives an empty stdin.
    pub stdin: Option<Vec<u8>>,
    /// An open lock file the process (and everything it starts) holds for
    /// its whole life: the run's branch lock, so the branch stays taken for
    /// as long as any process of the run lives, whatever became of slipway.
    /// Host processes only (a container's cannot hold a host lock).
    pub hold: Option<std::os::fd::RawFd>,
}

/// Output from a running process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputEvent {
    /// A complete line (without its newline), from stdout or stderr.
    Line(String),
    /// Bytes arrived that do not end a line yet: the process is not idle.
    Activity,
}

/// Stops a process and everything it started.
pub trait Killer: Send + Sync {
    /// Kills the whole process tree; returns once the signal is delivered.
    fn kill(&self) -> BoxFuture<'static, ()>;
}

/// A started process.
pub struct Execution {
    /// Output lines, until every writer has closed its end.
    pub output: mpsc::UnboundedReceiver<OutputEvent>,
    /// The exit code (128+signal when killed by a signal).
    pub exit: oneshot::Receiver<Result<i32, SandboxError>>,
    /// Kills the tree.
    pub killer: Arc<dyn Killer>,
    /// Host pid of the process, when it has one.
    pub pid: Option<u32>,
}

/// A sandbox failure (not an agent failure: a non-zero exit is reported as a code).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The program could not be started.
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// An empty command.
    #[error("the command is empty; give a program to run")]
    EmptyCommand,
    /// An image build names a Dockerfile that is not there.
    #[error("no Dockerfile at {} (the Dockerfile is found relative to the context {})", dockerfile.display(), context.display())]
    NoDockerfile {
        /// Where it was looked for.
        dockerfile: std::path::PathBuf,
        /// The build context.
        context: std::path::PathBuf,
    },
    /// Anything else the provider reports.
    #[error("{0}")]
    Other(String),
}

/// A place to run processes for the length of a run.
pub trait Sandbox: Send + Sync {
    /// The provider's name (`none`, `docker`, …).
    fn name(&self) -> &'static str;
    /// Starts a process.
    fn exec(&self, spec: ExecSpec) -> BoxFuture<'_, Result<Execution, SandboxError>>;
    /// Tears the sandbox down (its processes too).
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Whether `close` ends every process left behind, so strays of a finished
    /// process only need killing when they hold its output open.
    fn reaps_strays_on_close(&self) -> bool {
        false
    }
}
