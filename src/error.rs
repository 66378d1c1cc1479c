//! Errors that reach the user and the outcome of a command. Only `main.rs`
//! turns them into exit codes ([`Error::exit_code`], [`Outcome::exit_code`]).

/// Exit codes, documented in the README ("Exit codes").
pub mod exit {
    /// The run completed and no threshold was exceeded.
    pub const SUCCESS: i32 = 0;
    /// A latency threshold set by the user (`--max-latency`, `--break-threshold`) was exceeded.
    pub const THRESHOLD: i32 = 1;
    /// Bad usage or bad input: an invalid option, value or file.
    pub const USAGE: i32 = 2;
    /// The environment refused: missing privilege, device or kernel feature.
    pub const ENVIRONMENT: i32 = 3;
    /// An I/O failure while writing results (disk full, unwritable path).
    pub const IO: i32 = 4;
}

/// The cause behind an [`Error`], kept for `Debug` (not returned by `source()`).
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error with a category that decides the exit code. The message is one
/// line that says what went wrong, why, and how to fix it: it states the
/// cause itself, so `source()` is `None` and a printer that walks the chain
/// prints the cause once. The cause is kept for `Debug` ([`Error::because`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Wrong option, value or input file (exit 2).
    #[error("{msg}")]
    Usage { msg: String, cause: Option<Cause> },
    /// Privilege, device, kernel feature or peer missing (exit 3).
    #[error("{msg}")]
    Environment { msg: String, cause: Option<Cause> },
    /// Writing results failed (exit 4).
    #[error("{msg}")]
    Io { msg: String, cause: Option<Cause> },
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage {
            msg: msg.into(),
            cause: None,
        }
    }
    pub fn env(msg: impl Into<String>) -> Self {
        Error::Environment {
            msg: msg.into(),
            cause: None,
        }
    }
    pub fn io(msg: impl Into<String>) -> Self {
        Error::Io {
            msg: msg.into(),
            cause: None,
        }
    }
    /// Keep `cause` for `Debug`; the message must already state it. A
    /// cause that only the user's limits explain ([`limit_fix`]) adds its
    /// fix to the message, unless it is named there already.
    pub fn because(mut self, cause: impl Into<Cause>) -> Self {
        let cause = cause.into();
        let fix = cause.downcast_ref::<std::io::Error>().and_then(limit_fix);
        let (Error::Usage { cause: kept, msg }
        | Error::Environment { cause: kept, msg }
        | Error::Io { cause: kept, msg }) = &mut self;
        if let Some(fix) = fix.filter(|f| !msg.contains(f)) {
            msg.push_str("; ");
            msg.push_str(fix);
        }
        *kept = Some(cause);
        self
    }
    /// The one-line message.
    pub fn message(&self) -> &str {
        let (Error::Usage { msg, .. } | Error::Environment { msg, .. } | Error::Io { msg, .. }) =
            self;
        msg
    }
    pub fn kind(&self) -> Kind {
        match self {
            Error::Usage { .. } => Kind::Usage,
            Error::Environment { .. } => Kind::Environment,
            Error::Io { .. } => Kind::Io,
        }
    }
    pub fn exit_code(&self) -> i32 {
        self.kind().exit_code()
    }
}

/// The fix of an I/O error that the process's limits explain, not the
/// path or the device: too few open files (EMFILE, ENFILE), a file size
/// limit (EFBIG).
pub fn limit_fix(e: &std::io::Error) -> Option<&'static str> {
    match e.raw_os_error()? {
        libc::EMFILE | libc::ENFILE => {
            Some("too few open files are allowed: raise the limit ('ulimit -n 1024')")
        }
        libc::EFBIG => Some("the file size limit is too small: raise it ('ulimit -f unlimited')"),
        _ => None,
    }
}

/// The category of an [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Usage,
    Environment,
    Io,
}

impl Kind {
    pub fn exit_code(self) -> i32 {
        match self {
            Kind::Usage => exit::USAGE,
            Kind::Environment => exit::ENVIRONMENT,
            Kind::Io => exit::IO,
        }
    }
    /// A short name, as the load host reports it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Usage => "usage",
            Kind::Environment => "env",
            Kind::Io => "io",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// How a command that ran ended (an error that stopped it is an [`Error`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Completed; no threshold exceeded.
    Success,
    /// A latency threshold the user set was exceeded (results were written).
    ThresholdExceeded,
    /// The run measured and wrote its results, but the environment failed it
    /// (a peer went away, a device stopped): the message says what and how to fix it.
    EnvironmentFailed(String),
    /// An error already reported another way (the load host's JSON lines):
    /// exit with its code, print nothing more.
    Reported(Kind),
}

impl Outcome {
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Success => exit::SUCCESS,
            Outcome::ThresholdExceeded => exit::THRESHOLD,
            Outcome::EnvironmentFailed(_) => exit::ENVIRONMENT,
            Outcome::Reported(kind) => kind.exit_code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn the_message_states_the_cause_once_and_the_kind_decides_the_exit_code() {
        let cause = std::io::Error::from_raw_os_error(libc::EPERM);
        let e = Error::env(format!("cannot lock memory: {cause}; run as root")).because(cause);
        // The message names the cause; no chain repeats it.
        assert!(e.source().is_none());
        let shown = e.to_string();
        assert_eq!(
            shown.matches("Operation not permitted").count(),
            1,
            "{shown}"
        );
        // The cause stays visible to a developer.
        assert!(format!("{e:?}").contains("Os { code: 1"), "{e:?}");
        assert_eq!(e.exit_code(), exit::ENVIRONMENT);
        assert!(Error::usage("x").source().is_none());
        assert_eq!(Error::usage("x").exit_code(), exit::USAGE);
        assert_eq!(Error::io("x").exit_code(), exit::IO);
        assert_eq!(Outcome::Reported(Kind::Io).exit_code(), exit::IO);
        assert_eq!(Outcome::ThresholdExceeded.exit_code(), exit::THRESHOLD);
        assert_eq!(
            Outcome::EnvironmentFailed("peer gone".into()).exit_code(),
            exit::ENVIRONMENT
        );
    }
}
