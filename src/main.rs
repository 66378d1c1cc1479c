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
                let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
                let first = lines.next().unwrap_or("error: bad usage");
                let first = first.strip_prefix("error: ").unwrap_or(first);
                // "the following required arguments were not provided:" names them on the next line.
                let detail = match (first.ends_with(':'), lines.next()) {
                    (true, Some(next)) => format!(" {next}"),
                    _ => String::new(),
                };
                eprintln!("rtlat: {first}{detail} (see 'rtlat --help')");
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
        Command::Switch(args) => report(rtlat::bench::switch::run(&args, argv)),
        Command::Cruncher(args) => report(rtlat::bench::cruncher::run(&args, argv)),
        Command::Net(args) => report(rtlat::bench::net::run(&args, argv)),
        Command::Irq(args) => report(rtlat::bench::irq::run(&args, argv)),
        Command::Load(args) => report(rtlat::load::run(&args, argv)),
        Command::Report(args) => report(rtlat::report::run_report(&args)),
        Command::Compare(args) => report(rtlat::report::run_compare(&args)),
        Command::Import(args) => report(rtlat::report::run_import(&args)),
    };
    std::process::exit(code);
}

/// The exit code of a command, printing its error as one line.
fn report(outcome: rtlat::error::Result<i32>) -> i32 {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rtlat: {e}");
            e.exit_code()
        }
    }
}
