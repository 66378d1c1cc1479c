//! Errors that reach the user, each with its documented exit code.

use std::fmt;

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

/// An error with a category that decides the exit code.
/// The message is one line that says what went wrong and how to fix it.
#[derive(Debug)]
pub enum Error {
    /// Wrong option or value (exit 2).
    Usage(String),
    /// Privilege, device or kernel feature missing (exit 3).
    Environment(String),
    /// Writing results failed (exit 4).
    Io(String),
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn env(msg: impl Into<String>) -> Self {
        Error::Environment(msg.into())
    }
    pub fn io(msg: impl Into<String>) -> Self {
        Error::Io(msg.into())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Environment(_) => exit::ENVIRONMENT,
            Error::Io(_) => exit::IO,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Environment(m) | Error::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
