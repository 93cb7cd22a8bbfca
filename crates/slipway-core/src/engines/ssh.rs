//! An engine reached over SSH (`ssh://[user@]host[:port][/socket]`): slipway
//! runs the user's own `ssh` to forward the engine's socket to a private
//! local one for as long as the connection is used, so the user's keys,
//! agent, `~/.ssh/config` and known hosts apply, and nothing new is trusted.
//! `ssh` runs with `BatchMode` (it never asks for a password or a host key:
//! an unknown host is a failure that says to connect once by hand).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Docker listens on most machines.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// How often a starting forward is looked at. `ssh` says nothing when its
/// forward is up; the local socket accepting a connection is the sign.
const FORWARD_POLL: Duration = Duration::from_millis(20);

/// The program run for `ssh`: `SLIPWAY_SSH` when set (a wrapper that adds
/// `-F`, say), else `ssh` on `PATH`.
fn program() -> std::ffi::OsString {
    std::env::var_os("SLIPWAY_SSH").unwrap_or_else(|| "ssh".into())
}

/// A parsed `ssh://` engine url.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// The login name, when given.
    pub user: Option<String>,
    /// The host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// The port, when not ssh's default.
    pub port: Option<u16>,
    /// The engine's socket on that host.
    pub socket: String,
}

impl std::fmt::Display for SshTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssh://")?;
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        if self.socket != DEFAULT_SOCKET {
            write!(f, "{}", self.socket)?;
        }
        Ok(())
    }
}

impl SshTarget {
    /// Reads what follows `ssh://`. Names are checked strictly: they reach
    /// `ssh`'s command line, where one starting with `-` would be an option.
    pub fn parse(rest: &str, text: &str) -> Result<SshTarget, String> {
        let example = "write ssh://user@host, ssh://user@host:2222 or ssh://user@host/run/user/1000/docker.sock";
        let (authority, socket) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, DEFAULT_SOCKET),
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((user, hostport)) => (Some(user), hostport),
            None => (None, authority),
        };
        if let Some(user) = user
            && !valid_user(user)
        {
            return Err(format!(
                "url '{text}': the user '{user}' is not a login name (letters, digits, '.', '_', '-', not first '-'); {example}"
            ));
        }
        let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
            let Some((host, after)) = inner.split_once(']') else {
                return Err(format!(
                    "url '{text}': an IPv6 address needs its closing ']'; {example}"
                ));
            };
            (host, after.strip_prefix(':'))
        } else {
            match hostport.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (hostport, None),
            }
        };
        if !valid_host(host) {
            return Err(format!(
                "url '{text}': '{host}' is not a host name or address; {example}"
            ));
        }
        let port = match port {
            None => None,
            Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                format!("url '{text}': the port '{p}' is not a number from 1 to 65535; {example}")
            })?),
        };
        if !valid_socket(socket) {
            return Err(format!(
                "url '{text}': the socket '{socket}' is not an absolute path without ':' or spaces; {example}"
            ));
        }
        Ok(SshTarget {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port,
            socket: socket.to_owned(),
        })
    }

    /// `user@host` or `host`, as `ssh` takes it.
    fn destination(&self) -> String {
        match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

fn valid_user(user: &str) -> bool {
    !user.is_empty()
        && !user.starts_with('-')
        && user.len() <= 64
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn valid_host(host: &str) -> bool {
    let ipv6 = host.contains(':')
        && host
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    let name = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    !host.is_empty() && !host.starts_with('-') && host.len() <= 253 && (ipv6 || name)
}

fn valid_socket(socket: &str) -> bool {
    socket.starts_with('/')
        && socket.len() > 1
        && !socket
            .chars()
            .any(|c| c == ':' || c.is_whitespace() || c.is_control())
}

/// The engine's socket forwarded to a local one by an `ssh` process, for
/// the life of this value.
#[derive(Debug)]
pub struct Forward {
    child: Child,
    socket: PathBuf,
    // Dropped after the child is stopped: it holds the local socket.
    _dir: PrivateDir,
}

/// A folder only the user can enter, for the forwarded socket (anyone who can
/// reach that socket can drive the engine); removed with its content when dropped.
#[derive(Debug)]
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new() -> std::io::Result<PrivateDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        remove_left_by_the_dead(&base);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let mut attempt = 0u32;
        loop {
            let dir = base.join(format!(
                "slipway-ssh-{}-{nanos:x}-{attempt}",
                std::process::id()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => return Ok(PrivateDir(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Removes the folders of forwards whose slipway died without dropping them
/// (killed with -9: its `ssh` went with it, the folder stayed). Only ours:
/// named `slipway-ssh-<pid>-…`, owned by this user, and that pid gone.
fn remove_left_by_the_dead(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("slipway-ssh-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // A link or someone else's folder is left alone.
        let ours =
            std::fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        // SAFETY: kill with signal 0 only asks whether the pid exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if ours
            && gone
            && let Err(e) = std::fs::remove_dir_all(entry.path())
        {
            tracing::warn!("cannot remove {}: {e}", entry.path().display());
        }
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            tracing::warn!("cannot remove {}: {e}", self.0.display());
        }
    }
}

impl Forward {
    /// Starts `ssh` and waits, up to `deadline`, for the local socket to
    /// accept a connection. The error says what `ssh` said.
    pub async fn open(target: &SshTarget, deadline: Duration) -> Result<Forward, String> {
        let dir = PrivateDir::new()
            .map_err(|e| format!("cannot make a folder for the forwarded socket: {e}"))?;
        let socket = dir.0.join("docker.sock");
        let program = program();
        let mut command = Command::new(&program);
        command
            .args(["-N", "-T"])
            .args(["-o", "BatchMode=yes"])
            .args(["-o", "ExitOnForwardFailure=yes"])
            .args(["-o", "ControlMaster=no", "-o", "ControlPath=none"])
            .args(["-o", "ServerAliveInterval=15"]);
        if let Some(port) = target.port {
            command.arg("-p").arg(port.to_string());
        }
        command
            .arg("-L")
            .arg(format!("{}:{}", socket.display(), target.socket))
            .arg("--")
            .arg(target.destination())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: runs in the child between fork and exec and only calls
        // prctl, which is async-signal-safe. The forward must not outlive
        // the slipway that made it, even one killed with -9.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| {
            format!(
                "cannot start {}: {e} (install the OpenSSH client, or set SLIPWAY_SSH to it)",
                Path::new(&program).display()
            )
        })?;
        let mut forward = Forward {
            child,
            socket,
            _dir: dir,
        };
        let started = Instant::now();
        loop {
            if let Some(status) = forward.child.try_wait().map_err(|e| e.to_string())? {
                let mut said = String::new();
                if let Some(mut err) = forward.child.stderr.take() {
                    // What it printed is only for the message; none is still a failure.
                    err.read_to_string(&mut said).ok();
                }
                let said = crate::shown::line(said.trim());
                let hint = if said.contains("Host key verification failed") {
                    " (connect once with `ssh` by hand to check and accept the host's key)"
                } else {
                    ""
                };
                return Err(format!(
                    "ssh to {} ended ({status}): {said}{hint}",
                    target.destination()
                ));
            }
            if tokio::net::UnixStream::connect(&forward.socket)
                .await
                .is_ok()
            {
                forward.drain_stderr();
                return Ok(forward);
            }
            if started.elapsed() >= deadline {
                return Err(format!(
                    "ssh to {} did not forward the engine's socket within {} s",
                    target.destination(),
                    deadline.as_secs()
                ));
            }
            tokio::time::sleep(FORWARD_POLL).await;
        }
    }

    /// Reads what `ssh` says from now on into the log, so that a long run's
    /// warnings cannot fill the pipe and stall the forward.
    fn drain_stderr(&mut self) {
        let Some(err) = self.child.stderr.take() else {
            return;
        };
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                tracing::info!("ssh forward: {}", crate::shown::line(&line));
            }
        });
    }

    /// The local socket the engine answers on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        // Already gone is fine; a forward left running would be a leak.
        if let Err(e) = self.child.kill() {
            tracing::debug!("ssh forward already ended: {e}");
        }
        if let Err(e) = self.child.wait() {
            tracing::warn!("cannot reap the ssh forward: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(rest: &str) -> Result<SshTarget, String> {
        SshTarget::parse(rest, &format!("ssh://{rest}"))
    }

    #[test]
    fn reads_user_host_port_and_socket() {
        let t = parse("me@box.example:2222/run/user/1000/docker.sock").expect("valid");
        assert_eq!(
            (
                t.user.as_deref(),
                t.host.as_str(),
                t.port,
                t.socket.as_str()
            ),
            (
                Some("me"),
                "box.example",
                Some(2222),
                "/run/user/1000/docker.sock"
            )
        );
        assert_eq!(
            t.to_string(),
            "ssh://me@box.example:2222/run/user/1000/docker.sock"
        );
        let plain = parse("box").expect("valid");
        assert_eq!(
            (plain.user, plain.port, plain.socket.as_str()),
            (None, None, DEFAULT_SOCKET)
        );
        assert_eq!(parse("root@[::1]:22").expect("ipv6").host, "::1");
    }

    #[test]
    fn names_that_ssh_would_read_as_options_are_refused() {
        for bad in [
            "-oProxyCommand=touch_x",
            "me@-oProxyCommand=x",
            "-me@box",
            "me@box:port",
            "me@box:0",
            "me@box/sock:et",
            "me@box/so ck",
            "me@bo x",
            "me@",
            "m;e@box",
        ] {
            assert!(parse(bad).is_err(), "{bad} was taken");
        }
    }
}
