//! Integration tests: the binary, run as a user would run it.
//! Tests that need root say so when skipped; under CI=true they fail instead.

mod check;
mod cross;
mod cruncher;
mod errors;
mod irq;
mod load;
mod meta;
mod net;
mod outputs;
mod report;
mod signals;
#[path = "../support/snapshot.rs"]
mod snapshot;
mod switch;
mod timer;
mod util;
