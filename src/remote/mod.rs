//! rtlat on other machines, through the system's OpenSSH client (BatchMode,
//! key authentication only): the targets `ssh://[user@]host[:port]`, one
//! command there ([`Ssh`]), and a run of rtlat there beside a local one
//! ([`peer::Peer`]: `net ping --serve-on`, `irq host --target`). Used by
//! `rtlat suite` and by the two-system benchmarks.

pub mod peer;

use std::process::{Command, Output, Stdio};

/// `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl Target {
    pub fn parse(s: &str) -> std::result::Result<Target, String> {
        let bad =
            |why: &str| format!("'{s}' is not a target ({why}); give ssh://[user@]host[:port]");
        let rest = s.strip_prefix("ssh://").ok_or_else(|| bad("no ssh://"))?;
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
            Some(_) => return Err(bad("empty user")),
            None => (None, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p.parse::<u16>().map_err(|_| bad("bad port"))?),
                None if after.is_empty() => None,
                None => return Err(bad("junk after ]")),
            };
            (h.to_string(), port)
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    Some(p.parse::<u16>().map_err(|_| bad("bad port"))?),
                ),
                None => (hostport.to_string(), None),
            }
        };
        let ok = !host.is_empty()
            && !host.starts_with('-')
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c));
        if !ok
            || user
                .as_deref()
                .is_some_and(|u| u.starts_with('-') || u.contains(['/', ' ']))
        {
            return Err(bad("bad host or user"));
        }
        Ok(Target { user, host, port })
    }

    /// The target's directory name under `--out`: `[user@]host[_port]`.
    pub fn dir_name(&self) -> String {
        let mut s = match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        };
        if let Some(p) = self.port {
            s.push_str(&format!("_{p}"));
        }
        s.replace(':', "_")
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        match (self.host.contains(':'), self.port) {
            (true, Some(p)) => write!(f, "[{}]:{p}", self.host),
            (false, Some(p)) => write!(f, "{}:{p}", self.host),
            (_, None) => f.write_str(&self.host),
        }
    }
}

/// ssh's exit status for its own errors (connection, authentication).
const SSH_FAILED: i32 = 255;
/// A shell's exit status for a command it cannot find.
const NOT_FOUND: i32 = 127;

/// One argument for the remote shell, single-quoted.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A target reached through the system's ssh client.
#[derive(Debug, Clone)]
pub struct Ssh {
    pub target: Target,
    /// `-o` options given with `--ssh-option`.
    pub options: Vec<String>,
}

impl Ssh {
    /// `ssh … [user@]host -- COMMAND` (key authentication only, no prompt);
    /// `tty`: with a terminal on the target, so that its command receives
    /// SIGHUP when the connection ends and leaves nothing running.
    pub fn command(&self, remote: &str, tty: bool) -> Command {
        let mut c = Command::new("ssh");
        // ssh takes the first value of each option: BatchMode is never
        // overridden, the timeouts after them are defaults the user's win over.
        c.args(["-o", "BatchMode=yes"]);
        for o in &self.options {
            c.arg("-o").arg(o);
        }
        // LogLevel=ERROR: without ssh's "Connection to … closed." after a
        // command on a terminal, so that a step's last line is rtlat's.
        c.args(["-o", "ConnectTimeout=10"]).args([
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "LogLevel=ERROR",
        ]);
        if let Some(p) = self.target.port {
            c.arg("-p").arg(p.to_string());
        }
        c.arg(if tty { "-tt" } else { "-T" });
        match &self.target.user {
            Some(u) => c.arg(format!("{u}@{}", self.target.host)),
            None => c.arg(&self.target.host),
        };
        c.arg("--").arg(remote).stdin(Stdio::null());
        crate::sys::process::die_with_spawner(&mut c);
        c
    }

    /// Run `remote` to its end and collect its output.
    pub fn output(&self, remote: &str) -> std::io::Result<Output> {
        self.command(remote, false).output()
    }

    /// ssh's own last error line.
    pub(crate) fn why(out: &Output) -> String {
        let text = String::from_utf8_lossy(&out.stderr);
        let last = text
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("ssh failed");
        crate::render::one_line(last)
    }

    /// Whether the target answers at all.
    pub fn reachable(&self) -> std::result::Result<(), String> {
        match self.output("true") {
            Ok(o) if o.status.code() == Some(SSH_FAILED) => Err(Self::why(&o)),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("cannot run ssh: {e}; install openssh-client")),
        }
    }

    /// Refuse a target without rtlat or with another version of it.
    pub fn check_version(&self, rtlat: &str) -> std::result::Result<(), String> {
        let t = &self.target;
        let out = self
            .output(&format!("{} --version", quote(rtlat)))
            .map_err(|e| format!("{t}: cannot run ssh: {e}; install openssh-client"))?;
        let ours = format!("rtlat {}", env!("CARGO_PKG_VERSION"));
        let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
        match out.status.code() {
            Some(SSH_FAILED) => Err(format!("{t} is unreachable: {}", Self::why(&out))),
            Some(NOT_FOUND) => Err(format!(
                "{t} has no '{rtlat}'; install rtlat there or give --remote-rtlat PATH"
            )),
            Some(0) if said == ours => Ok(()),
            Some(0) => Err(format!(
                "{t} runs '{}', this is '{ours}'; install the same version there",
                crate::render::one_line(&said)
            )),
            _ => Err(format!(
                "{t}: '{rtlat} --version' failed ({}); give --remote-rtlat PATH",
                Self::why(&out)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        let t = Target::parse("ssh://root@10.0.0.1:2222").unwrap();
        assert_eq!(
            t,
            Target {
                user: Some("root".into()),
                host: "10.0.0.1".into(),
                port: Some(2222)
            }
        );
        assert_eq!(t.dir_name(), "root@10.0.0.1_2222");
        let t = Target::parse("ssh://[fd00::1]:22").unwrap();
        assert_eq!(t.host, "fd00::1");
        assert_eq!(Target::parse("ssh://board").unwrap().dir_name(), "board");
        for bad in ["board", "ssh://", "ssh://h:x", "ssh://-oProxy", "ssh://@h"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
