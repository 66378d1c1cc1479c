//! `rtlat report`, `compare` and `import` (being built; see the issue).

use crate::error::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {}
#[derive(Debug, clap::Args)]
pub struct CompareArgs {}
#[derive(Debug, clap::Args)]
pub struct ImportArgs {}

pub fn run_report(_args: &ReportArgs) -> Result<i32> {
    Err(Error::usage(
        "rtlat report is not available in this build yet",
    ))
}
pub fn run_compare(_args: &CompareArgs) -> Result<i32> {
    Err(Error::usage(
        "rtlat compare is not available in this build yet",
    ))
}
pub fn run_import(_args: &ImportArgs) -> Result<i32> {
    Err(Error::usage(
        "rtlat import is not available in this build yet",
    ))
}
