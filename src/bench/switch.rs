//! `rtlat switch` (being built; see the issue).

use crate::error::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct SwitchArgs {}

pub fn run(_args: &SwitchArgs, _argv: Vec<String>) -> Result<i32> {
    Err(Error::usage(
        "rtlat switch is not available in this build yet",
    ))
}
