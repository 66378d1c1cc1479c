//! rtlat: parse, dispatch, and the only place outcomes and errors become
//! the documented exit codes.

use clap::error::{ContextKind, ErrorKind};
use clap::{CommandFactory, Parser};
use rtlat::bench::net::NetConfig;
use rtlat::bench::timer::TimerConfig;
use rtlat::cli::{Cli, Command};
use rtlat::error::{exit, Error, Outcome};
use rtlat::load::LoadCommand;
#[cfg(feature = "host-tools")]
use rtlat::render::ReportConfig;

/// The static build's allocator (Cargo.toml says why): memory it maps stays
/// mapped, so a run's resident memory stays flat for hours under mlockall.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: rlsf::GlobalTlsf = rlsf::GlobalTlsf::new();

/// The stack the work needs at most (a debug build's parser needs some
/// 512 KiB): Rust gives every other thread this much. Under a smaller
/// `ulimit -s` the main thread's stack cannot grow to it, so the work runs
/// on a thread of this size instead.
const WORK_STACK: u64 = 2 << 20;

fn main() {
    if let Err(e) = rtlat::sys::signals::survive_file_size_limit() {
        eprintln!("rtlat: cannot handle SIGXFSZ: {e}");
        std::process::exit(exit::ENVIRONMENT);
    }
    let small = rtlat::sys::probe::rlimit_stack().is_some_and(|(soft, _)| soft < WORK_STACK);
    if !small {
        work();
    }
    let worker = std::thread::Builder::new()
        .name("rtlat".into())
        .stack_size(WORK_STACK as usize)
        .spawn(|| {
            work();
        });
    match worker {
        Ok(w) => {
            // Signals meant for the process go to the work's threads.
            let _ = rtlat::sys::signals::block_all_here();
            let _ = w.join();
            // The work panicked (it ends the process itself otherwise).
            std::process::exit(101);
        }
        Err(e) => {
            eprintln!("rtlat: cannot start (the stack limit, ulimit -s, is small and no thread could be made: {e}); raise 'ulimit -s'");
            std::process::exit(exit::ENVIRONMENT);
        }
    }
}

/// Parse, dispatch, and end the process with the command's exit code.
fn work() -> ! {
    // Arguments as the kernel gave them: a file name need not be UTF-8 (clap
    // takes paths as `PathBuf` and refuses other bytes in text options).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            ErrorKind::InvalidSubcommand if left_out(&e, rtlat::cli::TRACE_TOOLS).is_some() => {
                let name = left_out(&e, rtlat::cli::TRACE_TOOLS).unwrap_or_default();
                if let Err(e) =
                    rtlat::cli::common::needs_kernel_trace(Some(&format!("rtlat {name}")))
                {
                    eprintln!("rtlat: {e}");
                }
                std::process::exit(exit::ENVIRONMENT);
            }
            ErrorKind::InvalidSubcommand if left_out(&e, rtlat::cli::HOST_TOOLS).is_some() => {
                let name = left_out(&e, rtlat::cli::HOST_TOOLS).unwrap_or_default();
                eprintln!(
                    "rtlat: '{name}' is not in this board build of rtlat (built without the \
                     host-tools feature): run it with the full build, e.g. on a workstation"
                );
                std::process::exit(exit::USAGE);
            }
            ErrorKind::InvalidUtf8 => {
                eprintln!("rtlat: {}", not_utf8(&args));
                std::process::exit(exit::USAGE);
            }
            _ => {
                let command = command_of(&args);
                eprintln!("rtlat: {}", one_line(&e.render().to_string(), &command));
                std::process::exit(exit::USAGE);
            }
        },
    };
    // The command line a result records: bytes that are not UTF-8 become U+FFFD.
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let outcome = match cli.command {
        Command::Timer(args) => TimerConfig::try_from(&args)
            .and_then(|c| rtlat::bench::timer::run(&c, argv))
            .map(|f| f.outcome),
        Command::Check(args) => rtlat::check::run(args.json),
        Command::Switch(args) => rtlat::bench::switch::SwitchConfig::try_from(&args)
            .and_then(|c| rtlat::bench::switch::run(&c, argv)),
        Command::Cruncher(args) => rtlat::bench::cruncher::CruncherConfig::try_from(&args)
            .and_then(|c| rtlat::bench::cruncher::run(&c, argv)),
        Command::Noise(args) => rtlat::bench::noise::NoiseConfig::try_from(&args)
            .and_then(|c| rtlat::bench::noise::run(&c, argv)),
        Command::Net(args) => {
            NetConfig::try_from(&args).and_then(|c| rtlat::bench::net::run(&c, argv))
        }
        Command::Irq(args) => rtlat::bench::irq::IrqConfig::try_from(&args)
            .and_then(|c| rtlat::bench::irq::run(&c, argv)),
        #[cfg(feature = "kernel-trace")]
        Command::Watch(args) => rtlat::bench::watch::WatchConfig::try_from(&args)
            .and_then(|c| rtlat::bench::watch::run(&c, argv)),
        Command::Load(args) => {
            LoadCommand::try_from(&args).and_then(|c| rtlat::load::run(&c, argv))
        }
        #[cfg(feature = "host-tools")]
        Command::Suite(args) => {
            rtlat::suite::SuiteConfig::try_from(&args).and_then(|c| rtlat::suite::run(&c))
        }
        #[cfg(feature = "host-tools")]
        Command::Compare(args) if args.by_board => rtlat::suite::BoardsConfig::try_from(&args)
            .and_then(|c| rtlat::suite::compare_boards(&c)),
        #[cfg(feature = "host-tools")]
        Command::Report(args) => {
            ReportConfig::try_from(&args).and_then(|c| rtlat::render::run_report(&c))
        }
        #[cfg(feature = "host-tools")]
        Command::Compare(args) => rtlat::render::compare::CompareConfig::try_from(&args)
            .and_then(|c| rtlat::render::compare::run(&c)),
        #[cfg(feature = "host-tools")]
        Command::Trend(args) => {
            rtlat::trend::TrendConfig::try_from(&args).and_then(|c| rtlat::trend::run(&c))
        }
        #[cfg(feature = "host-tools")]
        Command::Import(args) => {
            rtlat::import::ImportConfig::try_from(&args).and_then(|c| rtlat::import::run(&c))
        }
        #[cfg(feature = "host-tools")]
        Command::Completions(args) => {
            rtlat::cli::meta::completions(&args).map(|()| Outcome::Success)
        }
        #[cfg(feature = "host-tools")]
        Command::Man(args) => rtlat::cli::meta::man(&args).map(|()| Outcome::Success),
    };
    std::process::exit(exit_code(outcome));
}

/// clap's error in one line: its first line, its tip (the subcommand or
/// option meant, where one is close), and the help of `command`, the
/// (sub)command it is about.
fn one_line(rendered: &str, command: &str) -> String {
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let first = lines.first().copied().unwrap_or("error: bad usage");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // "the following required arguments were not provided:" names them on
    // the next line.
    let detail = match (first.ends_with(':'), lines.get(1)) {
        (true, Some(next)) => format!(" {next}"),
        _ => String::new(),
    };
    let tip = lines
        .iter()
        .find_map(|l| l.strip_prefix("tip: "))
        .map(|t| format!("; {t}"))
        .unwrap_or_default();
    format!("{first}{detail}{tip} (see '{command} --help')")
}

/// The (sub)command the arguments name, as far as they name one:
/// `rtlat net ping` for `rtlat net ping --rat 5`.
fn command_of(args: &[std::ffi::OsString]) -> String {
    let mut cmd = Cli::command();
    // Every subcommand's own subcommands and options, deferred until one is
    // parsed (an error path: memory does not matter here).
    cmd.build();
    let mut path = vec!["rtlat".to_string()];
    for a in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if a.starts_with('-') {
            continue;
        }
        let Some(sub) = cmd.find_subcommand(a).cloned() else {
            break;
        };
        path.push(sub.get_name().to_string());
        cmd = sub;
    }
    path.join(" ")
}

/// Which argument clap refused as not UTF-8 (a label, a name, any text
/// option: file names may hold any bytes), and the option it belongs to.
fn not_utf8(args: &[std::ffi::OsString]) -> String {
    let Some(at) = args.iter().position(|a| a.to_str().is_none()) else {
        return "an argument is not UTF-8 text (see 'rtlat --help')".into();
    };
    let shown = args[at].to_string_lossy();
    let option = args[..at]
        .last()
        .and_then(|a| a.to_str())
        .filter(|a| a.starts_with("--"));
    match option {
        Some(o) => format!(
            "the value of {o} ('{shown}') is not UTF-8 text; labels and other text must be UTF-8 (only file names may hold other bytes)"
        ),
        None => format!(
            "argument {at} ('{shown}') is not UTF-8 text; labels and other text must be UTF-8 (only file names may hold other bytes)"
        ),
    }
}

/// The subcommand asked for, when it is one of `names`, which only the
/// full build has (a board build does not know it).
fn left_out(e: &clap::Error, names: &[&str]) -> Option<String> {
    match e.get(ContextKind::InvalidSubcommand)? {
        clap::error::ContextValue::String(name) if names.contains(&name.as_str()) => {
            Some(name.clone())
        }
        _ => None,
    }
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
