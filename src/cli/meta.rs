//! `rtlat completions SHELL` and `rtlat man DIR`: shell completions and man
//! pages generated from the clap definitions, so option help is written once.

use super::Cli;
use crate::error::{Error, Result};
use clap::{Args, CommandFactory};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing): rtlat.1 and one rtlat-SUBCOMMAND.1 per subcommand
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Print the completion script for `shell` to stdout.
pub fn completions(a: &CompletionsArgs) -> Result<()> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "rtlat", &mut script);
    crate::outfile::print(&String::from_utf8_lossy(&script));
    Ok(())
}

/// Write a man page per command and subcommand into `dir`; returns the pages written.
pub fn man_pages(dir: &Path) -> Result<Vec<PathBuf>> {
    let fail = |e: std::io::Error| {
        Error::io(format!(
            "cannot write man pages into {}: {e}; choose a writable directory",
            dir.display()
        ))
        .because(e)
    };
    crate::outfile::make_dir(dir, "the man page directory")?;
    clap_mangen::generate_to(Cli::command(), dir).map_err(fail)?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(fail)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "1")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("rtlat"))
        })
        .collect();
    pages.sort();
    Ok(pages)
}

/// `rtlat man DIR`: write the pages and name them.
pub fn man(a: &ManArgs) -> Result<()> {
    for p in man_pages(&a.dir)? {
        crate::outln!("{}", p.display());
    }
    Ok(())
}
