//! A program on a real pseudo-terminal, for the agents' interactive command
//! lines: it gets a 120x40 terminal as its controlling tty, what it draws is
//! kept both as a byte log and as the screen a terminal would show (`vt100`
//! keeps the grid: full-screen UIs move the cursor around and redraw pieces of
//! lines), keystrokes can be typed, and the queries full-screen UIs send at
//! start (cursor position, device attributes, colours, modes) are answered as
//! a terminal would, so they do not wait for a reply that never comes.
//!
//! `SLIPWAY_TEST_PTY_DUMP=FILE` keeps the raw bytes of each pty when it closes,
//! for looking at what a CLI drew.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running program on a pty.
pub struct Pty {
    child: Child,
    writer: Arc<Mutex<File>>,
    raw: Arc<Mutex<Vec<u8>>>,
    grid: Arc<Mutex<vt100::Parser>>,
}

/// Lines of the terminal.
const ROWS: u16 = 40;
/// Columns of the terminal.
const COLS: u16 = 120;

/// Terminal queries with fixed answers, as a dark xterm gives them.
const ANSWERS: [(&[u8], &[u8]); 7] = [
    (b"\x1b[6n", b"\x1b[1;1R"),
    (b"\x1b[c", b"\x1b[?62;22c"),
    (b"\x1b[0c", b"\x1b[?62;22c"),
    (b"\x1b]10;?", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),
    (b"\x1b]11;?", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),
    (b"\x1b[?u", b"\x1b[?0u"),
    (b"\x1b[>q", b"\x1bP>|xterm(390)\x1b\\"),
];

/// Answers for queries that carry a number: a palette colour (`OSC 4;N;?`),
/// a mode (`DECRQM`, `CSI ? N $ p`: "not recognised"), the colour scheme
/// (`CSI ? 996 n`: dark).
fn numbered_answers(data: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(data);
    let number = |s: &str| -> String { s.chars().take_while(char::is_ascii_digit).collect() };
    let mut out = Vec::new();
    for (i, _) in text.match_indices("\x1b]4;") {
        let rest = &text[i + 4..];
        let n = number(rest);
        if !n.is_empty() && rest[n.len()..].starts_with(";?") {
            out.push(format!("\x1b]4;{n};rgb:8080/8080/8080\x1b\\").into_bytes());
        }
    }
    for (i, _) in text.match_indices("\x1b[?") {
        let rest = &text[i + 3..];
        let n = number(rest);
        let after = &rest[n.len()..];
        if !n.is_empty() && after.starts_with("$p") {
            out.push(format!("\x1b[?{n};0$y").into_bytes());
        }
        if n == "996" && after.starts_with('n') {
            out.push(b"\x1b[?997;1n".to_vec());
        }
    }
    out
}

impl Pty {
    /// Starts `argv` in `cwd` with `envs` (the environment is exactly that, plus
    /// `TERM` and `PWD`), in its own session with the pty as its terminal.
    pub fn spawn(argv: &[String], cwd: &Path, envs: &[(String, OsString)]) -> Pty {
        let (master, slave) = open_pty();
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(cwd)
            .env_clear()
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .env("TERM", "xterm-256color")
            .env("COLORTERM", "truecolor")
            .env("PWD", cwd)
            .stdin(Stdio::from(slave.try_clone().expect("dup pty")))
            .stdout(Stdio::from(slave.try_clone().expect("dup pty")))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new
        // session, then the pty (already on fd 0) as its controlling terminal.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?} on a pty: {e}", argv));
        let reader = File::from(master);
        let writer = Arc::new(Mutex::new(reader.try_clone().expect("dup pty master")));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (rows, cols) = (
            std::num::NonZeroU16::new(ROWS).expect("ROWS is not zero"),
            std::num::NonZeroU16::new(COLS).expect("COLS is not zero"),
        );
        let grid = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        {
            let (screen, writer) = (Arc::clone(&raw), Arc::clone(&writer));
            let grid = Arc::clone(&grid);
            let mut reader = reader;
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                // EIO once the program and its children closed the terminal.
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    grid.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .process(&buf[..n]);
                    let mut shown = screen.lock().unwrap_or_else(|e| e.into_inner());
                    let before = shown.len();
                    shown.extend_from_slice(&buf[..n]);
                    // A query can span two reads: look a little before the new
                    // bytes, at queries that end among them.
                    let from = before.saturating_sub(8);
                    let mut answers: Vec<Vec<u8>> = Vec::new();
                    for (query, answer) in ANSWERS {
                        for _ in ends_of(&shown[from..], query).filter(|e| from + e > before) {
                            answers.push(answer.to_vec());
                        }
                    }
                    answers.extend(numbered_answers(&buf[..n]));
                    let mut w = writer.lock().unwrap_or_else(|e| e.into_inner());
                    for answer in answers {
                        if w.write_all(&answer).is_err() {
                            break;
                        }
                    }
                }
            });
        }
        Pty {
            child,
            writer,
            raw,
            grid,
        }
    }

    /// The program's pid (also its session and process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Types `text` (use `\r` for Enter).
    pub fn type_text(&self, text: &str) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        w.write_all(text.as_bytes()).expect("write to the pty");
    }

    /// What the terminal shows now.
    pub fn screen(&self) -> String {
        self.grid
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .screen()
            .contents()
    }

    /// Everything ever written to the terminal, escape sequences removed
    /// (pieces of lines drawn apart stay apart).
    pub fn drawn(&self) -> String {
        let raw = self.raw.lock().unwrap_or_else(|e| e.into_inner()).clone();
        strip_escapes(&raw)
    }

    /// Waits until the screen satisfies `check`; false on timeout.
    pub fn wait_for(&self, timeout: Duration, mut check: impl FnMut(&str) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if check(&self.screen()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100)); // allow-sleep: the poll interval of a wait for the screen
        }
    }

    /// Whether the program is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the program's whole session (every process it started on this
    /// terminal) and reaps it.
    pub fn kill(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: signalling the process group this helper created (setsid).
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
        if let Err(e) = self.child.wait() {
            eprintln!("pty: cannot reap {}: {e}", self.child.id());
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Some(dump) = std::env::var_os("SLIPWAY_TEST_PTY_DUMP") {
            let raw = self.raw.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Err(e) = std::fs::write(&dump, raw) {
                eprintln!("pty: cannot write {}: {e}", dump.to_string_lossy());
            }
        }
        if self.running() {
            self.kill();
        }
    }
}

fn open_pty() -> (OwnedFd, OwnedFd) {
    let mut master = -1;
    let mut slave = -1;
    let size = libc::winsize {
        ws_row: ROWS,
        ws_col: COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds it opened into the pointers given; the
    // name and termios arguments may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both fds were just opened by openpty and are owned by nothing else.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // The master must not leak into the program (it would never see EOF).
    // SAFETY: setting FD_CLOEXEC on an fd this function owns.
    unsafe {
        libc::fcntl(master.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
    }
    (master, slave)
}

/// Where each occurrence of `needle` in `hay` ends.
fn ends_of<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    hay.windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(move |(i, _)| i + needle.len())
}

/// Text without CSI/OSC escape sequences or other control bytes (newlines kept).
pub fn strip_escapes(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') | Some('P') | Some('_') => {
                    // Until BEL or ESC \.
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' => out.push('\n'),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
