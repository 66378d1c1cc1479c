//! rtlat: parse, dispatch, map errors to the documented exit codes.

use clap::error::ErrorKind;
use clap::Parser;
use rtlat::cli::{Cli, Command};
use rtlat::error::exit;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => {
                // One line: clap's first line, and where to look.
                let rendered = e.render().to_string();
                let first = rendered.lines().next().unwrap_or("error: bad usage");
                let first = first.strip_prefix("error: ").unwrap_or(first);
                eprintln!("rtlat: {first} (see 'rtlat --help')");
                std::process::exit(exit::USAGE);
            }
        },
    };
    let code = match cli.command {
        Command::Timer(args) => match rtlat::bench::timer::run(&args, argv) {
            Ok(outcome) => outcome.exit_code,
            Err(e) => {
                eprintln!("rtlat: {e}");
                e.exit_code()
            }
        },
        Command::Check(args) => match rtlat::check::run(args.json) {
            Ok(()) => exit::SUCCESS,
            Err(e) => {
                eprintln!("rtlat: {e:#}");
                exit::ENVIRONMENT
            }
        },
    };
    std::process::exit(code);
}
