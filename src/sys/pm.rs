//! The PM QoS request on `/dev/cpu_dma_latency`, held open for the whole run.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};

pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// An open PM QoS request: the kernel keeps CPUs out of idle states whose exit
/// latency exceeds the value for as long as the file stays open.
#[derive(Debug)]
pub struct DmaLatency {
    _file: File,
    pub value_us: i32,
}

impl DmaLatency {
    /// Open the device and write the target latency in µs (binary s32, as the kernel documents).
    pub fn hold(value_us: i32) -> io::Result<Self> {
        let mut file = OpenOptions::new().write(true).open(DEVICE)?;
        file.write_all(&value_us.to_ne_bytes())?;
        Ok(DmaLatency {
            _file: file,
            value_us,
        })
    }
}
