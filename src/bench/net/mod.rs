//! `rtlat net` (being built; see the issue).

use crate::error::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct NetArgs {}

pub fn run(_args: &NetArgs, _argv: Vec<String>) -> Result<i32> {
    Err(Error::usage("rtlat net is not available in this build yet"))
}
