//! Integration tests: the binary, run as a user would run it.
//! Tests that need root say so when skipped; under CI=true they fail instead.

#[macro_use]
mod case;
mod boards;
mod check;
mod coexist;
mod cross;
mod cruncher;
mod deb;
mod emulation;
mod errors;
mod evidence;
mod explain;
#[cfg(feature = "kernel-trace")]
mod explain_restore;
mod explain_wakes;
mod first_contact;
#[cfg(feature = "host-tools")]
mod forecast;
mod harness;
mod hostile_input;
mod hostile_output;
mod hostile_peers;
mod hostile_suite;
mod hotplug;
mod import;
mod import_plain;
mod import_sources;
mod irq;
mod lava;
mod load;
mod meta;
mod metrics;
mod net;
mod noise;
mod noise_explain;
mod outputs;
mod peer;
mod report;
mod report_reading;
mod signals;
#[path = "../support/snapshot.rs"]
mod snapshot;
mod split;
mod sshd;

mod suite;
mod suite_report;
mod switch;
mod timer;
mod trend;
mod util;
mod watch;
