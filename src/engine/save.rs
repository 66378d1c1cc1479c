//! Rewriting the result file during and at the end of a run.

use crate::error::{Error, Result};
use crate::result::RunResult;
use std::path::PathBuf;

/// Where and how often the result file is written.
pub struct Saver {
    pub path: Option<PathBuf>,
    pub every_ns: u64,
    pub last_error: Option<String>,
}

impl Saver {
    /// Write `result`; a failure is remembered (and reported once) but never stops the measurement.
    pub fn save(&mut self, result: &RunResult) {
        let Some(path) = &self.path else { return };
        match result.save(path) {
            Ok(()) => self.last_error = None,
            Err(e) => {
                let msg = format!(
                    "cannot write {}: {e}; check the path and free space (the measurement goes on)",
                    path.display()
                );
                if self.last_error.as_deref() != Some(msg.as_str()) {
                    eprintln!("rtlat: {msg}");
                }
                self.last_error = Some(msg);
            }
        }
    }

    /// The final write; its failure decides the exit code.
    pub fn save_final(&mut self, result: &RunResult) -> Result<()> {
        self.save(result);
        match &self.last_error {
            Some(msg) => Err(Error::io(msg.clone())),
            None => Ok(()),
        }
    }
}
