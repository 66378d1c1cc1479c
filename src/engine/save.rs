//! Rewriting the result file during and at the end of a run (through the
//! one output writer, [`crate::outfile`]).

use crate::error::Result;
use crate::outfile::{self, Output};
use crate::result::RunResult;
use std::path::PathBuf;

/// Where the result file is written.
pub struct Saver {
    /// The checked destination; it holds the output's lock until the end.
    target: Option<(PathBuf, Output)>,
    /// The last rewrite's failure, reported once until a rewrite succeeds.
    last_error: Option<String>,
}

impl Saver {
    /// Check the destination before the run starts: one that cannot be
    /// written, or has no room for `first` (the result as first saved), ends
    /// the run before it measures (exit 4, with the fix).
    pub fn new(path: Option<&PathBuf>, first: &RunResult) -> Result<Saver> {
        let target = match path {
            Some(p) => {
                let size = serde_json::to_vec_pretty(first).map_or(0, |v| v.len() as u64 + 1);
                let room = size.max(outfile::MIN_ROOM);
                Some((p.clone(), outfile::checked_with_room(p, room)?))
            }
            None => None,
        };
        Ok(Saver {
            target,
            last_error: None,
        })
    }

    /// Rewrite the file during the run (not standard output or /dev/null:
    /// those get the final result only); a failure is reported once and never stops the
    /// measurement.
    pub fn save(&mut self, result: &RunResult) {
        let Some((path, dest)) = &self.target else {
            return;
        };
        if !dest.takes_rewrites() {
            return;
        }
        match write(dest, result) {
            Ok(()) => self.last_error = None,
            Err(e) => {
                let msg = format!(
                    "{} (the measurement goes on)",
                    outfile::write_error(path, e)
                );
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    eprintln!("rtlat: {msg}");
                }
                self.last_error = Some(msg);
            }
        }
    }

    /// The final write; its failure decides the exit code (and is printed
    /// once, by the caller).
    pub fn save_final(&mut self, result: &RunResult) -> Result<()> {
        match &self.target {
            Some((path, dest)) => write(dest, result).map_err(|e| outfile::write_error(path, e)),
            None => Ok(()),
        }
    }
}

fn write(dest: &outfile::Destination, result: &RunResult) -> std::io::Result<()> {
    dest.write_with(|w| {
        // An I/O error comes back as itself (EFBIG, ENOSPC: the fix depends on it).
        serde_json::to_writer_pretty(&mut *w, result).map_err(std::io::Error::from)
    })
}
