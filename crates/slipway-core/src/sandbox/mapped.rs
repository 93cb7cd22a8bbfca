//! A sandbox whose paths differ from the host's: commands given a host path
//! as their working directory run at the matching path inside.

use std::path::PathBuf;

use super::{BoxFuture, ExecSpec, Execution, Sandbox, SandboxError};

/// Wraps a sandbox and maps host path prefixes to sandbox paths.
pub struct MappedSandbox {
    inner: Box<dyn Sandbox>,
    map: Vec<(PathBuf, PathBuf)>,
}

impl MappedSandbox {
    /// `map` holds (host prefix, sandbox prefix) pairs; the longest match wins.
    pub fn new(inner: Box<dyn Sandbox>, mut map: Vec<(PathBuf, PathBuf)>) -> MappedSandbox {
        map.sort_by_key(|(host, _)| std::cmp::Reverse(host.components().count()));
        MappedSandbox { inner, map }
    }
}

impl Sandbox for MappedSandbox {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn exec(&self, mut spec: ExecSpec) -> BoxFuture<'_, Result<Execution, SandboxError>> {
        if let Some((host, inside)) = self.map.iter().find(|(host, _)| spec.cwd.starts_with(host))
            && let Ok(rel) = spec.cwd.strip_prefix(host)
        {
            spec.cwd = inside.join(rel);
        }
        self.inner.exec(spec)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn reaps_strays_on_close(&self) -> bool {
        self.inner.reaps_strays_on_close()
    }
}
