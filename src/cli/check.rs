//! `rtlat check` options.

use clap::Args;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the findings as JSON
    #[arg(long)]
    pub json: bool,
}
