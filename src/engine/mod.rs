//! The run engine every benchmark uses and that knows none of them: real-time
//! setup ([`rt`]), orchestration of the measuring threads and the reporter
//! ([`run`]), the reporter's channels ([`channel`]), live output ([`live`]),
//! the result file's rewrites ([`save`]) and the shared run control
//! ([`control`]).

pub mod channel;
pub mod control;
pub mod crew;
pub mod live;
pub mod rt;
pub mod run;
pub mod save;

pub use crate::sys::signals::StopFlag;
pub use channel::Channel;
pub use control::{OutputConfig, RunControl, Setup};
pub use crew::{LostCpu, Moved, Worker, WorkerEnd};
pub use rt::RtConfig;
pub use run::{execute, Finished, Finisher, RunSpec};
