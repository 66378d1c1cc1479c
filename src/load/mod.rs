//! `rtlat load` and the load generators (being built; see the issue).

use crate::error::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct LoadArgs {}

pub fn run(_args: &LoadArgs, _argv: Vec<String>) -> Result<i32> {
    Err(Error::usage(
        "rtlat load is not available in this build yet",
    ))
}
