//! Reading the engine list out of the user's `config.toml`, strictly: a key
//! slipway does not know, a repeated name, a limit below 1 or a url it cannot
//! reach is an error that says what to write instead.
//!
//! ```toml
//! [[engines]]
//! name = "local"
//! url = "unix:///var/run/docker.sock"
//! limit = 4
//!
//! [[engines]]
//! name = "build-server"
//! url = "tcp://10.0.0.5:2375"
//! limit = 8
//! isolated = true        # it cannot see this machine's files
//! ```

use std::path::{Path, PathBuf};

use bollard::Docker;
use toml_edit::{DocumentMut, Item, TableLike};

use super::EngineError;

/// Keys of one `[[engines]]` table.
const KEYS: &[&str] = &["name", "url", "limit", "isolated"];

/// Where an engine listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineUrl {
    /// A Unix socket (Docker's, or Podman's Docker-compatible one).
    Unix(PathBuf),
    /// Plain HTTP over TCP, `host:port`.
    Tcp(String),
    /// Over SSH: the engine's socket on another machine, forwarded.
    Ssh(super::ssh::SshTarget),
}

impl std::fmt::Display for EngineUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineUrl::Unix(path) => write!(f, "unix://{}", path.display()),
            EngineUrl::Tcp(addr) => write!(f, "tcp://{addr}"),
            EngineUrl::Ssh(target) => write!(f, "{target}"),
        }
    }
}

impl EngineUrl {
    /// Reads a url; the error says what to write instead.
    pub fn parse(text: &str) -> Result<EngineUrl, String> {
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(format!(
                "url '{text}' has no scheme: write unix:///path/to/docker.sock or tcp://host:port"
            ));
        };
        match scheme {
            "unix" if rest.starts_with('/') => Ok(EngineUrl::Unix(PathBuf::from(rest))),
            "unix" => Err(format!(
                "url '{text}' names no absolute socket path: write unix:///var/run/docker.sock"
            )),
            "tcp" | "http" => {
                let addr = rest.trim_end_matches('/');
                let port_ok = addr
                    .rsplit_once(':')
                    .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
                if port_ok && !addr.contains('/') {
                    Ok(EngineUrl::Tcp(addr.to_owned()))
                } else {
                    Err(format!(
                        "url '{text}' is not host:port: write tcp://HOST:PORT (for example tcp://127.0.0.1:2375)"
                    ))
                }
            }
            "ssh" => super::ssh::SshTarget::parse(rest, text).map(EngineUrl::Ssh),
            "https" | "tls" => Err(format!(
                "url '{text}': TLS engines are not supported yet; reach the engine over ssh:// instead (url = \"ssh://user@host\")"
            )),
            other => Err(format!(
                "url '{text}' has the scheme '{other}', which slipway does not know: use unix://, tcp:// or ssh://"
            )),
        }
    }

    /// A client for a unix socket speaking API `version` (nothing is sent yet).
    pub(super) fn unix_client(
        path: &Path,
        version: &bollard::ClientVersion,
    ) -> Result<Docker, bollard::errors::Error> {
        Docker::connect_with_unix(
            &path.display().to_string(),
            crate::sandbox::docker::REQUEST_TIMEOUT_SECS,
            version,
        )
    }

    /// A client for `host:port` speaking API `version` (nothing is sent yet).
    pub(super) fn tcp_client(
        addr: &str,
        version: &bollard::ClientVersion,
    ) -> Result<Docker, bollard::errors::Error> {
        Docker::connect_with_http(
            &format!("tcp://{addr}"),
            crate::sandbox::docker::REQUEST_TIMEOUT_SECS,
            version,
        )
    }
}

/// One engine of the user's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Engine {
    /// Its name (`--engine NAME`, the run record's `engine`).
    pub name: String,
    /// Where it listens.
    pub url: EngineUrl,
    /// Most runs at once (at least 1).
    pub limit: u32,
    /// It cannot see the host's files: its runs use the isolated sandbox.
    pub isolated: bool,
}

impl Engine {
    pub(super) fn unreachable(&self, reason: String) -> EngineError {
        EngineError::Unreachable {
            engine: self.name.clone(),
            url: self.url.to_string(),
            reason,
        }
    }
}

/// The user's config file (`$XDG_CONFIG_HOME/slipway/config.toml`, else
/// `~/.config/slipway/config.toml`); `None` when neither variable is set.
pub fn config_file() -> Option<PathBuf> {
    crate::util::config_dir().map(|d| d.join(crate::workspace::USER_FILE_NAME))
}

/// The engines listed in the user's config file; none when it has none.
pub fn load() -> Result<Vec<Engine>, EngineError> {
    match config_file() {
        Some(file) => load_from(&file),
        None => Ok(Vec::new()),
    }
}

/// The engines listed in `file`; none when it is missing.
pub fn load_from(file: &Path) -> Result<Vec<Engine>, EngineError> {
    match std::fs::read_to_string(file) {
        Ok(text) => parse(&text, file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(EngineError::Read {
            file: file.to_path_buf(),
            source,
        }),
    }
}

/// The engines of a config file's text (`file` is named in every message).
pub fn parse(text: &str, file: &Path) -> Result<Vec<Engine>, EngineError> {
    let bad = |message: String| EngineError::Config {
        file: file.to_path_buf(),
        message,
    };
    let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        bad(format!("not valid TOML: {}", e.to_string().trim_end()))
    })?;
    let Some(item) = doc.get("engines") else {
        return Ok(Vec::new());
    };
    let tables: Vec<&dyn TableLike> = match item {
        Item::ArrayOfTables(a) => a.iter().map(|t| t as &dyn TableLike).collect(),
        Item::Value(toml_edit::Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_inline_table()
                    .map(|t| t as &dyn TableLike)
                    .ok_or_else(|| bad("engines must be a list of tables: write each as [[engines]] with name, url and limit".into()))
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(bad(
                "engines must be a list of tables: write each as [[engines]] with name, url and limit".into(),
            ));
        }
    };
    let mut engines: Vec<Engine> = Vec::new();
    for (i, table) in tables.into_iter().enumerate() {
        let at = format!("engine {}", i + 1);
        for (key, _) in table.iter() {
            if !KEYS.contains(&key) {
                return Err(bad(format!(
                    "{at}: unknown key '{key}'; an engine has name, url, limit and isolated"
                )));
            }
        }
        let string = |key: &str| -> Result<String, EngineError> {
            match table.get(key) {
                None => Err(bad(format!("{at}: '{key}' is missing; add {key} = \"…\""))),
                Some(v) => v
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad(format!("{at}: '{key}' must be a string"))),
            }
        };
        let name = string("name")?;
        let at = format!("engine '{name}'");
        if !valid_name(&name) {
            return Err(bad(format!(
                "{at}: the name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )));
        }
        if engines.iter().any(|e| e.name == name) {
            return Err(bad(format!(
                "two engines are named '{name}': give each engine its own name"
            )));
        }
        let url = EngineUrl::parse(&string("url")?).map_err(|m| bad(format!("{at}: {m}")))?;
        let limit = match table.get("limit") {
            None => {
                return Err(bad(format!(
                    "{at}: 'limit' is missing; add limit = N, the most runs at once on it (1 or more)"
                )));
            }
            Some(v) => v
                .as_integer()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    bad(format!(
                        "{at}: limit must be a whole number of runs, 1 or more (it is {}); write limit = 1 or higher, or remove the engine",
                        v.to_string().trim()
                    ))
                })?,
        };
        let isolated = match table.get("isolated") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad(format!("{at}: isolated must be true or false")))?,
        };
        engines.push(Engine {
            name,
            url,
            limit,
            isolated,
        });
    }
    Ok(engines)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> String {
        match parse(text, Path::new("config.toml")) {
            Err(EngineError::Config { message, .. }) => message,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn engines_read_in_file_order() {
        let engines = parse(
            "[[engines]]\nname = \"local\"\nurl = \"unix:///var/run/docker.sock\"\nlimit = 4\n\
             [[engines]]\nname = \"far\"\nurl = \"tcp://127.0.0.1:23750\"\nlimit = 2\nisolated = true\n",
            Path::new("config.toml"),
        )
        .expect("valid");
        assert_eq!(engines.len(), 2);
        assert_eq!(
            engines[0].url,
            EngineUrl::Unix("/var/run/docker.sock".into())
        );
        assert_eq!((engines[1].limit, engines[1].isolated), (2, true));
        assert_eq!(engines[1].url.to_string(), "tcp://127.0.0.1:23750");
    }

    #[test]
    fn every_rule_says_how_to_fix_it() {
        let one = |extra: &str| format!("[[engines]]\nname = \"a\"\nurl = \"tcp://h:1\"\n{extra}");
        assert!(message(&one("limit = 0\n")).contains("1 or more"));
        assert!(message(&one("")).contains("add limit = N"));
        assert!(message(&one("limit = 1\nlimt = 2\n")).contains("unknown key 'limt'"));
        assert!(
            message(&format!("{}{}", one("limit = 1\n"), one("limit = 1\n")))
                .contains("give each engine its own name")
        );
        assert!(
            message("[[engines]]\nname = \"a\"\nurl = \"ftp://x\"\nlimit = 1\n")
                .contains("use unix://, tcp:// or ssh://")
        );
        assert!(
            message("[[engines]]\nname = \"a\"\nurl = \"ssh://-oProxyCommand=x\"\nlimit = 1\n")
                .contains("is not a host name")
        );
        assert!(
            message("[[engines]]\nname = \"a\"\nurl = \"tcp://box\"\nlimit = 1\n")
                .contains("host:port")
        );
    }
}
