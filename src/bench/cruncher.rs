//! `rtlat cruncher` (being built; see the issue).

use crate::error::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct CruncherArgs {}

pub fn run(_args: &CruncherArgs, _argv: Vec<String>) -> Result<i32> {
    Err(Error::usage(
        "rtlat cruncher is not available in this build yet",
    ))
}
