//! A board for the tests that reach one over ssh (`suite --target`,
//! `net ping --serve-on`, `irq host --target`): a network namespace with its
//! own OpenSSH server, joined to the test's by a veth pair.

use crate::util::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A "board": a network namespace joined to the test's by a veth pair
/// (10.202.N.1 inside, 10.202.N.2 on the test's side, addresses only there)
/// with its own sshd, root login by a key the test made. Dropping it kills
/// every process in the namespace and deletes it.
pub struct Board {
    pub ns: String,
    pub addr: String,
    sshd: Option<std::process::Child>,
    _slot: Slot,
}

/// Keys for the client (`key`, authorized on every board) and the boards' host key.
pub struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    pub fn new() -> Keys {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["key", "host"] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(name))
                .status()
                .expect("ssh-keygen runs");
            assert!(st.success());
        }
        std::fs::copy(
            dir.path().join("key.pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        Keys { dir }
    }

    pub fn ssh_options(&self) -> Vec<String> {
        let key = self.dir.path().join("key");
        [
            "StrictHostKeyChecking=no".to_string(),
            "UserKnownHostsFile=/dev/null".into(),
            "LogLevel=ERROR".into(),
            format!("IdentityFile={}", key.display()),
        ]
        .into_iter()
        .flat_map(|o| ["--ssh-option".to_string(), o])
        .collect()
    }
}

impl Board {
    pub fn new(keys: &Keys) -> Board {
        let slot = slot("board");
        let n = slot.n;
        let pid = std::process::id();
        let ns = format!("rtlat-sshd-{pid}-{n}");
        let (inside, outside) = (format!("rs{pid}x{n}a"), format!("rs{pid}x{n}b"));
        let mut board = Board {
            ns: ns.clone(),
            addr: format!("10.202.{n}.1"),
            sshd: None,
            _slot: slot,
        };
        ip(&["netns", "add", &ns]);
        ip(&[
            "link", "add", &outside, "type", "veth", "peer", "name", &inside, "netns", &ns,
        ]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("10.202.{n}.1/24"),
            "dev",
            &inside,
        ]);
        ip(&["-n", &ns, "link", "set", &inside, "up"]);
        ip(&["addr", "add", &format!("10.202.{n}.2/24"), "dev", &outside]);
        ip(&["link", "set", &outside, "up"]);
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
        let config = keys.dir.path().join(format!("sshd-{n}.conf"));
        std::fs::write(
            &config,
            format!(
                "ListenAddress {}\nPort 22\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n",
                board.addr,
                keys.dir.path().join("host").display(),
                keys.dir.path().join("authorized_keys").display()
            ),
        )
        .unwrap();
        board.sshd = Some(
            Command::new("ip")
                .args(["netns", "exec", &ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
                .arg(&config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("sshd starts"),
        );
        // Wait until it listens.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !Command::new("ip")
            .args(["netns", "exec", &ns, "ss", "-ltnH", "sport = :22"])
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false)
        {
            assert!(Instant::now() < deadline, "sshd does not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        board
    }

    pub fn target(&self) -> String {
        format!("ssh://root@{}", self.addr)
    }

    /// The processes in the namespace (sshd, its sessions, what they run).
    pub fn pids(&self) -> Vec<String> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.ns])
            .output()
            .expect("ip runs");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    /// The board goes away: everything in its namespace is killed.
    pub fn kill_all(&mut self) {
        for pid in self.pids() {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        self.kill_all();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.ns])
            .stderr(Stdio::null())
            .status();
    }
}

/// Why the boards need the native build: they run the host's x86_64 rtlat
/// over ssh, not the emulated one (a `Native` need).
pub const SSH_BOARDS: &str = "the ssh boards run the host's native rtlat, not the emulated build";

/// What the boards' ssh server is (a `Provided` need, with [`sshd`]).
pub const SSHD: &str = "openssh-server (/usr/sbin/sshd)";

/// Whether this machine has the ssh server the boards run.
pub fn sshd() -> bool {
    Path::new("/usr/sbin/sshd").exists()
}
