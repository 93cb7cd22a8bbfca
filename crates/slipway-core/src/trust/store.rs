//! The user's approvals, outside every repository: one small JSON file per
//! approved place in `$XDG_CONFIG_HOME/slipway/trust/` (else
//! `$HOME/.config/slipway/trust/`), named by the id of the place's path and
//! holding the path and the approved content's id. One file per place means
//! two approvals never race over a shared file, each is written atomically,
//! and approving a place again replaces what was approved there before.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::content_id;

/// Where approvals are kept.
#[derive(Debug, Clone)]
pub struct TrustStore {
    dir: PathBuf,
}

/// One approval as it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    /// The approved place (see [`super::location`]).
    path: PathBuf,
    /// The approved content's id.
    hash: String,
    /// When, in seconds since the epoch.
    trusted_at: u64,
}

impl TrustStore {
    /// The store in `dir` (which need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> TrustStore {
        TrustStore { dir: dir.into() }
    }

    /// The store of the process environment; `None` when neither
    /// `XDG_CONFIG_HOME` nor `HOME` names a config folder.
    pub fn from_env() -> Option<TrustStore> {
        crate::util::config_dir().map(|dir| TrustStore::new(dir.join("trust")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry_path(&self, location: &Path) -> io::Result<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        let id = content_id(location.as_os_str().as_bytes()).map_err(io::Error::other)?;
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// The content id approved for `location`, if any. An entry that cannot
    /// be read, or that names another place, approves nothing.
    pub fn approved(&self, location: &Path) -> Option<String> {
        let bytes = std::fs::read(self.entry_path(location).ok()?).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        (entry.path == location && is_content_id(&entry.hash)).then_some(entry.hash)
    }

    /// Approves `hash` as the content of `location`, replacing an earlier approval.
    pub fn approve(&self, location: &Path, hash: &str) -> io::Result<()> {
        // Approvals say which programs may run: nobody else needs to read them.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let entry = Entry {
            path: location.to_path_buf(),
            hash: hash.to_owned(),
            trusted_at: crate::util::now_secs(),
        };
        let bytes = serde_json::to_vec_pretty(&entry).map_err(io::Error::other)?;
        crate::util::write_atomic(&self.entry_path(location)?, &bytes)
    }

    /// Drops the approval of `location` (a file that is gone needs none).
    pub fn forget(&self, location: &Path) -> io::Result<()> {
        match std::fs::remove_file(self.entry_path(location)?) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

fn is_content_id(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(bytes: &[u8]) -> String {
        content_id(bytes).expect("hashes")
    }

    #[test]
    fn an_approval_is_for_one_place_and_one_content() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = TrustStore::new(dir.path().join("trust"));
        let place = Path::new("/repo/slipway.toml");
        assert_eq!(store.approved(place), None);
        store.approve(place, &id(b"a")).expect("approve");
        assert_eq!(store.approved(place), Some(id(b"a")));
        assert_eq!(store.approved(Path::new("/other/slipway.toml")), None);
        store.approve(place, &id(b"b")).expect("approve again");
        assert_eq!(store.approved(place), Some(id(b"b")));
        store.forget(place).expect("forget");
        assert_eq!(store.approved(place), None);
        store.forget(place).expect("forgetting twice is fine");
    }

    #[test]
    fn an_entry_naming_another_place_approves_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = TrustStore::new(dir.path());
        let place = Path::new("/repo/slipway.toml");
        store.approve(place, &id(b"a")).expect("approve");
        let file = store.entry_path(place).expect("entry path");
        let text = std::fs::read_to_string(&file).expect("entry");
        std::fs::write(&file, text.replace("/repo/", "/elsewhere/")).expect("tamper");
        assert_eq!(store.approved(place), None);
    }
}
