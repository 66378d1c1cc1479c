//! The text summary a person reads at the start and end of a run.
//! Measuring threads never format text; only these functions do.

pub mod text;
