//! Per-event bookkeeping of the watched line: sequence numbers, edge kinds,
//! timestamp order. Kept by the measuring thread; its counts become the
//! result's details ([`EdgeCounts`]).

use super::backend::Edge;
pub use crate::result::details::irq::EdgeCounts;

/// The edge account of a running role.
#[derive(Debug, Default)]
pub struct EdgeAccount {
    pub r: EdgeCounts,
    last_rising: Option<bool>,
    last_kernel_ns: u64,
}

impl EdgeAccount {
    /// Account for one event read from the watched line.
    #[inline]
    pub fn on_edge(&mut self, e: &Edge) {
        self.r.edges_seen += 1;
        let mut gap = 0;
        if let Some(seqno) = e.seqno {
            if let Some(last) = self.r.last_seqno {
                let d = seqno.wrapping_sub(last);
                if d == 0 || d > u32::MAX / 2 {
                    // Backwards: cannot happen on one request; count it as disorder.
                    self.r.repeated_edges += 1;
                } else {
                    gap = d - 1;
                }
            } else {
                self.r.first_seqno = Some(seqno);
            }
            self.r.last_seqno = Some(seqno);
            self.r.lost_events += u64::from(gap);
        }
        if gap == 0 && self.last_rising == Some(e.rising) {
            self.r.repeated_edges += 1;
        }
        self.last_rising = Some(e.rising);
        if let Some(k) = e.kernel_ns {
            if k < self.last_kernel_ns {
                self.r.timestamp_errors += 1;
            }
            self.last_kernel_ns = k;
        }
    }

    /// The level the watched line was last seen at.
    pub fn last_level(&self) -> Option<bool> {
        self.last_rising
    }

    /// Start from a known level (read before the run).
    pub fn set_level(&mut self, high: bool) {
        self.last_rising = Some(high);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(rising: bool, seqno: u32, k: u64) -> Edge {
        Edge {
            rising,
            kernel_ns: Some(k),
            user_ns: k + 1,
            seqno: Some(seqno),
        }
    }

    #[test]
    fn account_counts_seqno_gaps_repeats_and_backward_timestamps() {
        let mut a = EdgeAccount::default();
        a.set_level(false);
        a.on_edge(&edge(true, 1, 10));
        a.on_edge(&edge(false, 2, 20));
        // seqno 3 and 4 lost: the kind may repeat without being "repeated".
        a.on_edge(&edge(false, 5, 30));
        // A repeat with no gap is a repeated edge.
        a.on_edge(&edge(false, 6, 40));
        // Timestamp going backwards.
        a.on_edge(&edge(true, 7, 35));
        assert_eq!(a.r.edges_seen, 5);
        assert_eq!(a.r.lost_events, 2);
        assert_eq!(a.r.repeated_edges, 1);
        assert_eq!(a.r.timestamp_errors, 1);
        assert_eq!((a.r.first_seqno, a.r.last_seqno), (Some(1), Some(7)));
    }

    #[test]
    fn seqno_wraps_without_a_false_gap() {
        let mut a = EdgeAccount::default();
        a.on_edge(&edge(true, u32::MAX, 1));
        a.on_edge(&edge(false, 0, 2));
        a.on_edge(&edge(true, 2, 3));
        // MAX -> 0 is continuous; 0 -> 2 lost one.
        assert_eq!(a.r.lost_events, 1);
        assert_eq!(a.r.repeated_edges, 0);
    }
}
