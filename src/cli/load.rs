//! `rtlat load` options.

use super::common::positive_duration;
use crate::error::Error;
use crate::load::{parse_spec, LoadCommand, LoadOptions};
use std::path::PathBuf;

const LOAD_HELP: &str = "\
SPEC is a comma-separated list of loads; each takes ':'-separated arguments,
either key=value or a bare count, size, rate or period:

  exec[:N][:cmd=COMMAND]     N workers [1] fork+exec COMMAND [ls /bin] in a loop, output to
                             /dev/null (the \"while ls\" load); cmd= takes the rest of its load
  hackbench[:G][:fds=N][:size=B][:ipc=socket|pipe][:mode=process|thread]
                             G groups [10] of N senders and N receivers [20] exchanging B-byte
                             messages [100], as rt-tests' hackbench; rate: messages/s
  memory[:N][:SIZE][:stride=B]
                             N workers [1] each over its own SIZE working set [32M], one cache
                             line per access, B bytes apart [4160: a page + a line]; rate: bytes/s
  cpu[:N]                    N computing workers [one per load CPU]; rate: rounds/s
  io[:N][:SIZE][:block=B][:dir=PATH]
                             N workers [1] rewriting a nameless file bounded to SIZE [64M] in
                             B-byte blocks [64K], fsync after each, in PATH [$TMPDIR, /var/tmp]
  net[:RATE|flood][:payload=B]
                             UDP datagrams of B bytes [1024] at RATE [4MB/s] or as fast as
                             possible, to rtlat's loopback sink or --load-target
  timers[:N][:PERIOD]        N threads [8] woken every PERIOD [100us], 1 ns timer slack
  kspin[:PERIOD][:len=LEN][:off=preempt|irqs][:N]
                             N workers [1] each have the kernel spin LEN [1ms] every PERIOD
                             [100ms] with preemption (or interrupts) off, through the rtlat
                             responder module (kmod/): a latency of known cause

Sizes and rates: K, M, G (and KiB, MiB, GiB) are powers of 1024; KB, MB, GB are
powers of 1000 (4MB/s is 4 000 000 bytes/s). Loads run at SCHED_OTHER in their own
process group; nothing outlives rtlat, not even after SIGKILL.

Examples:
  rtlat load exec:2,memory:32M,cpu:1 --duration 5s
  rtlat load hackbench:4,net:flood --load-cpus 1
  rtlat load net:4MB/s --load-target 192.168.1.20:9000
  rtlat timer --load exec:2,memory:32M --idle-first 10m --duration 1h";

// `rtlat load SPEC`: run loads on their own and print what they achieve.
// (Not a doc comment: clap would make it the subcommand's about, see `cli::Command`.)
#[derive(Debug, clap::Args)]
#[command(after_help = LOAD_HELP)]
pub struct LoadArgs {
    /// The loads, e.g. exec:2,memory:32M,net:4MB/s (see below)
    #[arg(value_name = "SPEC", allow_hyphen_values = true)]
    pub spec: String,
    /// Stop after this long (e.g. 10s, 5m) [default: until interrupted]
    #[arg(long, short, allow_hyphen_values = true, value_parser = positive_duration)]
    pub duration: Option<u64>,
    /// CPUs the loads may run on, e.g. 1-3 [default: all online CPUs]
    #[arg(long, value_name = "LIST")]
    pub load_cpus: Option<String>,
    /// Where the net load sends [default: rtlat's own loopback sink]
    #[arg(long, value_name = "HOST:PORT")]
    pub load_target: Option<String>,
    /// How often the achieved rates are printed
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = positive_duration)]
    pub interval: u64,
    /// Print only the final table
    #[arg(long, short)]
    pub quiet: bool,
    /// Also write the load records to FILE as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run as the load host of another rtlat process (JSON lines on stdout, stops on stdin EOF)
    #[arg(long, hide = true)]
    pub serve: bool,
    /// With --serve: the pid of the process to die with
    #[arg(long, hide = true, value_name = "PID")]
    pub parent: Option<u32>,
}

impl TryFrom<&LoadArgs> for LoadCommand {
    type Error = Error;
    fn try_from(a: &LoadArgs) -> Result<Self, Error> {
        Ok(LoadCommand {
            spec: parse_spec(&a.spec)?,
            options: LoadOptions::parse(a.load_cpus.as_deref(), a.load_target.as_deref())?,
            duration: a.duration,
            interval: a.interval,
            quiet: a.quiet,
            json: a.json.clone(),
            serve: a.serve,
            parent: a.parent,
        })
    }
}
