//! rtlat: parse, dispatch, and the only place outcomes and errors become
//! the documented exit codes.

use clap::error::ErrorKind;
use clap::Parser;
use rtlat::bench::timer::TimerConfig;
use rtlat::cli::{Cli, Command};
use rtlat::error::{exit, Error, Outcome};
use rtlat::import::ImportConfig;
use rtlat::load::LoadCommand;

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
    let outcome = match cli.command {
        Command::Timer(args) => TimerConfig::try_from(&args)
            .and_then(|c| rtlat::bench::timer::run(&c, argv))
            .map(|f| f.outcome),
        Command::Check(args) => rtlat::check::run(args.json)
            .map(|()| Outcome::Success)
            .map_err(|e| Error::env(format!("{e:#}"))),
        Command::Switch(args) => rtlat::bench::switch::run(&args, argv),
        Command::Cruncher(args) => rtlat::bench::cruncher::run(&args, argv),
        Command::Net(args) => rtlat::bench::net::run(&args, argv),
        Command::Irq(args) => rtlat::bench::irq::run(&args, argv),
        Command::Load(args) => {
            LoadCommand::try_from(&args).and_then(|c| rtlat::load::run(&c, argv))
        }
        Command::Report(args) => rtlat::report::run_report(&args),
        Command::Compare(args) => rtlat::report::run_compare(&args),
        Command::Import(args) => ImportConfig::try_from(&args).and_then(|c| rtlat::import::run(&c)),
    };
    std::process::exit(exit_code(outcome));
}

/// The exit code of a command; its error, or an environment failure after
/// measuring, is printed as one line.
fn exit_code(outcome: Result<Outcome, Error>) -> i32 {
    match outcome {
        Ok(Outcome::EnvironmentFailed(msg)) => {
            eprintln!("rtlat: {msg}");
            exit::ENVIRONMENT
        }
        Ok(o) => o.exit_code(),
        Err(e) => {
            eprintln!("rtlat: {e}");
            e.exit_code()
        }
    }
}
