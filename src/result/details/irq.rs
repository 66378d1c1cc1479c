//! Details of an `irq` result: what happened to the edges of the run.

use super::Details;
use serde::{Deserialize, Serialize};

/// The edge account of a run, kept by the measuring thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeCounts {
    /// Measured edges rtlat drove (loopback, host).
    pub edges_driven: u64,
    /// Events read from the watched line, measured or not.
    pub edges_seen: u64,
    /// Trigger edges the target answered and measured.
    pub answered: u64,
    /// Measured edges with no event (loopback) or reply (host) within the timeout.
    pub missed: u64,
    /// Edges back to idle (`--edge rising|falling`) not seen within the timeout.
    pub missed_idle: u64,
    /// Events the kernel dropped: gaps in the sequence numbers.
    pub lost_events: u64,
    /// Two edges of one kind in a row with no event lost between them.
    pub repeated_edges: u64,
    /// Events of the other kind than the one awaited, or stale ones read before an edge (host: late replies).
    pub unexpected_edges: u64,
    /// Kernel timestamps that went backwards or fell outside [write, read].
    pub timestamp_errors: u64,
    /// Sequence numbers of the first and the last event.
    pub first_seqno: Option<u32>,
    pub last_seqno: Option<u32>,
    /// Periods skipped because an edge took longer than the period.
    pub overruns: u64,
}

/// The kernel responder's own counters (`irq target --reply-from
/// thread|kthread|irq`), read when the measuring ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponderCounts {
    /// Edges that entered the module's interrupt handler since it started.
    pub responder_seen: u64,
    /// Replies the module issued.
    pub responder_answered: u64,
    /// Edges that came before the previous one was answered (answered together).
    pub responder_coalesced: u64,
    /// Records lost because rtlat read them too late.
    pub responder_dropped: u64,
}

/// The `details` of an irq result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqDetails {
    /// `loopback`, `target` or `host`.
    pub role: String,
    #[serde(flatten)]
    pub edges: EdgeCounts,
    /// Every event's sequence number followed the one before (and there were some).
    pub seqno_continuous: bool,
    /// Target: rtlat's own share of the response, (event read → reply written) /
    /// (kernel timestamp → reply written), from the series averages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_share_of_response: Option<f64>,
    /// Target replying from the kernel: the module's counters.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub responder: Option<ResponderCounts>,
}

impl Details for IrqDetails {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_flat_and_read_back() {
        let d = IrqDetails {
            role: "loopback".into(),
            edges: EdgeCounts {
                missed: 2,
                first_seqno: Some(1),
                ..EdgeCounts::default()
            },
            seqno_continuous: false,
            own_share_of_response: None,
            responder: None,
        };
        let m = d.to_map();
        assert_eq!(m["missed"], 2);
        assert_eq!(m["role"], "loopback");
        assert_eq!(m["last_seqno"], serde_json::Value::Null);
        assert!(!m.contains_key("own_share_of_response"));
        assert!(!m.contains_key("responder_seen"));
        crate::result::details::keys_read_back(&d);
        let k = IrqDetails {
            responder: Some(ResponderCounts {
                responder_seen: 5,
                responder_answered: 4,
                responder_coalesced: 1,
                responder_dropped: 0,
            }),
            ..d
        };
        let m = k.to_map();
        assert_eq!(
            (&m["responder_seen"], &m["responder_coalesced"]),
            (&5.into(), &1.into())
        );
        crate::result::details::keys_read_back(&k);
    }
}
