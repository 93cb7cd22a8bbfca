//! Small helpers shared by the core: time, ids and atomic file writes.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A short random hex string, from the kernel's random source.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .is_ok();
    if !filled {
        // Fall back to time and pid: unique enough for names that are also locked.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let seed = nanos ^ (u128::from(std::process::id()) << 64);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8;
        }
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `bytes` to `path` atomically: a temp file beside it, fsync, rename,
/// then fsync of the directory, so a crash leaves the old or the new file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, true)
}

/// Replaces `path` with `bytes` atomically (a temp file renamed over it);
/// with `durable`, the file and its directory are synced first and after.
/// Without, a crash of the process still leaves the old or the new file;
/// a power cut may lose the change as a whole.
pub fn write_replacing(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("path has no parent directory"))?;
    std::fs::create_dir_all(dir)?;
    let file_name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("path has no file name"))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", random_hex(4)));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        std::fs::rename(&tmp, path)?;
        if durable {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// slipway's folder in the user's config dir for the given `XDG_CONFIG_HOME`
/// and `HOME` values: `$XDG_CONFIG_HOME/slipway`, else `$HOME/.config/slipway`.
/// A relative or empty `XDG_CONFIG_HOME` is ignored, as the XDG base
/// directory specification says.
pub fn config_dir_from(xdg_config_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
    let config = match xdg_config_home.map(Path::new) {
        Some(x) if x.is_absolute() => x.to_path_buf(),
        _ => {
            let home = home.map(Path::new).filter(|h| !h.as_os_str().is_empty())?;
            home.join(".config")
        }
    };
    Some(config.join("slipway"))
}

/// slipway's folder in the user's config dir, from the process environment
/// (see [`config_dir_from`]).
pub fn config_dir() -> Option<PathBuf> {
    config_dir_from(
        std::env::var_os("XDG_CONFIG_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// A time of day, `HH:MM:SS UTC`, of seconds since the epoch (with the date
/// when it is not today).
pub fn utc_clock(secs: u64) -> String {
    let (day, rest) = (secs / 86_400, secs % 86_400);
    let clock = format!(
        "{:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    );
    if day == now_secs() / 86_400 {
        return clock;
    }
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = day as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {clock}")
}

/// `n` and the noun, singular or plural as `n` wants: "1 commit", "3 commits".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod clock_tests {
    #[test]
    fn dates_and_times_read_as_a_calendar_does() {
        assert_eq!(super::utc_clock(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            super::utc_clock(1_767_225_600 + 3_723),
            "2026-01-01 01:02:03 UTC"
        );
        assert_eq!(super::utc_clock(951_782_400), "2000-02-29 00:00:00 UTC");
    }
}
