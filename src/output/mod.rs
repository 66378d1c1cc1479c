//! Everything a person reads: live output during a run and the text summary.
//! Measuring threads never format text; only these functions do.

pub mod live;
pub mod text;
