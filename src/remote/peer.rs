//! The other side of a two-system benchmark, run on a board over ssh for
//! the length of a local run: `rtlat net serve` for `net ping --serve-on`,
//! `rtlat irq target` for `irq host --target`.
//!
//! The board's rtlat is checked first (reachable, present, same version);
//! then `rtlat … --json FILE` runs there under `ssh -tt`, in its own process
//! group here (a Ctrl-C on this terminal reaches only the local run), and is
//! ready once it prints its start line. [`Peer::stop`] sends it a Ctrl-C
//! through its terminal (SIGINT: it ends as interrupted and writes its
//! result), waits for it, then fetches and removes FILE. Dropped without
//! `stop` (an error, this process killed), the ssh client is killed and the
//! remote run receives SIGHUP with its terminal: it ends as interrupted and
//! nothing is left running on either side.

use super::{quote, Ssh, Target};
use crate::error::{Error, Result};
use serde::Serialize;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long the remote run may take to print its start line.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// How long it may take to end and write its result after the Ctrl-C.
const STOP_WITHIN: Duration = Duration::from_secs(15);
/// The terminal's interrupt character.
const CTRL_C: u8 = 0x03;

/// rtlat on a board, reached over ssh (`--serve-on`/`--target`,
/// `--ssh-option`, `--remote-rtlat`). In a result's config it is the target.
#[derive(Debug, Clone)]
pub struct Board {
    pub ssh: Ssh,
    /// rtlat on the board (`--remote-rtlat`).
    pub rtlat: String,
}

impl Board {
    pub fn new(target: Target, options: Vec<String>, rtlat: String) -> Board {
        Board {
            ssh: Ssh { target, options },
            rtlat,
        }
    }
}

impl Serialize for Board {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.ssh.target.to_string())
    }
}

/// What the board's run left: its result, or why there is none.
#[derive(Debug)]
pub struct Fetched {
    /// Its result file, parsed.
    pub result: Option<serde_json::Value>,
    /// Why there is no result, or why the run did not end well.
    pub trouble: Option<String>,
}

/// A run of rtlat on a board.
pub struct Peer {
    ssh: Ssh,
    /// `rtlat net serve on ssh://…`, for messages.
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Its result file on the board.
    file: String,
    /// Its last line of output.
    last: Option<String>,
    stopped: bool,
}

/// Forward every line of `from` (terminal line ends trimmed) to `to`.
fn forward(from: impl Read + Send + 'static, to: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        // SIGINT/SIGTERM are for the run's signal thread, never this one.
        let _ = crate::sys::signals::block_termination();
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { return };
            let line = line.trim_end_matches('\r').to_string();
            if to.send(line).is_err() {
                return;
            }
        }
    });
}

impl Peer {
    /// Start `rtlat ARGS --json FILE` on `board` and wait until it prints a
    /// line starting with `ready` (its start line). Every refusal is an
    /// environment error of one line naming the fix.
    pub fn start(board: &Board, args: &[String], ready: &str) -> Result<Peer> {
        let t = &board.ssh.target;
        board.ssh.check_version(&board.rtlat).map_err(Error::env)?;
        let what = format!("'rtlat {}' on {t}", args.join(" "));
        let file = format!(
            "/tmp/rtlat-peer-{}-{}.json",
            std::process::id(),
            crate::sys::clock::now_ns(libc::CLOCK_REALTIME) % 1_000_000_000_000
        );
        let mut argv = vec![quote(&board.rtlat)];
        argv.extend(args.iter().map(|a| quote(a)));
        argv.extend(["--json".to_string(), quote(&file)]);
        let mut cmd = board.ssh.command(&format!("exec {}", argv.join(" ")), true);
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            Error::env(format!("cannot run ssh: {e}; install openssh-client")).because(e)
        })?;
        let (tx, lines) = mpsc::channel();
        if let Some(o) = child.stdout.take() {
            forward(o, tx.clone());
        }
        if let Some(e) = child.stderr.take() {
            forward(e, tx);
        }
        let mut peer = Peer {
            ssh: board.ssh.clone(),
            what,
            stdin: child.stdin.take(),
            child,
            lines,
            file,
            last: None,
            stopped: false,
        };
        peer.wait_ready(ready)?;
        Ok(peer)
    }

    fn wait_ready(&mut self, ready: &str) -> Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(ready) => return Ok(()),
                Ok(line) => {
                    if !line.trim().is_empty() {
                        self.last = Some(line);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(Error::env(format!(
                        "{} did not start within {}s; run it there by hand to see why",
                        self.what,
                        READY_WITHIN.as_secs()
                    )))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let code = self.child.wait().ok().and_then(|s| s.code());
                    self.stopped = true;
                    let said = self
                        .last
                        .as_deref()
                        .map(crate::render::one_line)
                        .unwrap_or_else(|| format!("exit status {code:?}"));
                    return Err(Error::env(format!("{} failed: {said}", self.what)));
                }
            }
        }
    }

    /// Keep the last line it printed (and never let its output back up).
    fn drain(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            if !line.trim().is_empty() {
                self.last = Some(line);
            }
        }
    }

    /// Interrupt the run (Ctrl-C through its terminal), wait for it to end,
    /// and fetch its result.
    pub fn stop(mut self) -> Fetched {
        self.stopped = true;
        if let Some(mut i) = self.stdin.take() {
            let _ = i.write_all(&[CTRL_C]).and_then(|()| i.flush());
            // Kept open until the end: an end of input could end the session early.
            self.stdin = Some(i);
        }
        let deadline = Instant::now() + STOP_WITHIN;
        let status = loop {
            self.drain();
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        self.drain();
        let mut trouble = match status.and_then(|s| s.code()) {
            // An interrupted run exits 0 (or 1 over a threshold): it wrote its result.
            Some(0 | 1) => None,
            None => Some(format!(
                "{} did not end within {}s of its Ctrl-C and was killed",
                self.what,
                STOP_WITHIN.as_secs()
            )),
            Some(255) => Some(format!(
                "lost the connection to {} during the run: its side's result is lost, this side's is kept",
                self.ssh.target
            )),
            Some(c) => Some(format!(
                "{} ended with exit status {c}{}",
                self.what,
                self.last
                    .as_deref()
                    .map(|l| format!(": {}", crate::render::one_line(l)))
                    .unwrap_or_default()
            )),
        };
        let result = match self.fetch() {
            Ok(v) => Some(v),
            Err(why) => {
                trouble.get_or_insert(why);
                None
            }
        };
        Fetched { result, trouble }
    }

    /// Its result file (`cat` over ssh), removed from the board.
    fn fetch(&self) -> std::result::Result<serde_json::Value, String> {
        let f = quote(&self.file);
        let out = self
            .ssh
            .output(&format!("cat {f} && rm -f {f}"))
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        if !out.status.success() || out.stdout.is_empty() {
            return Err(format!(
                "no result of {} to fetch ({})",
                self.what,
                Ssh::why(&out)
            ));
        }
        serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("the result of {} is not JSON: {e}", self.what))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            // Best effort: its partial result is of no use.
            let _ = self.ssh.output(&format!("rm -f {}", quote(&self.file)));
        }
    }
}
