//! Integration tests: the binary, run as a user would run it.
//! Tests that need root say so when skipped; under CI=true they fail instead.

mod check;
mod errors;
mod signals;
mod timer;
mod util;
