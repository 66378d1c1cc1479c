//! The one trace layer: rtlat's tracefs sessions and instances (every
//! setting restored, also after a killed run), the raw ring-buffer pages
//! and their reading from a point in time, and the one reader loop that
//! every reader of the kernel's trace runs beside a benchmark's threads.

pub mod instance;
pub mod ringpage;
pub mod tracefs;
pub mod window;
