//! Details of a `net` result (filled in by `rtlat net ping` and `rtlat net
//! serve`): which kernel timestamps were used, and the packet accounting of
//! the side that ran: a ping's lost, duplicated, reordered and late replies
//! (and its bulk traffic), or a server's requests and ignored datagrams.

use super::Details;
use serde::{Deserialize, Serialize};

/// Which kernel timestamps the TX/RX latencies come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timestamps {
    /// Kernel software timestamps (CLOCK_REALTIME; every NIC).
    Software,
    /// NIC hardware timestamps (the NIC's clock following CLOCK_REALTIME).
    Hardware,
}

impl Timestamps {
    pub fn is_hardware(self) -> bool {
        self == Timestamps::Hardware
    }

    /// `"software"` or `"hardware"`, as in the result.
    pub fn name(self) -> &'static str {
        match self {
            Timestamps::Software => "software",
            Timestamps::Hardware => "hardware",
        }
    }
}

/// The `details` of a net result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetDetails {
    /// The timestamps of the run (`timestamping` in the file).
    pub timestamping: Timestamps,
    /// The side's own record, its keys beside `timestamping`; `None` while
    /// the run is going on (the result files saved during the run).
    #[serde(flatten)]
    pub side: Option<NetSide>,
}

impl Details for NetDetails {}

/// Which side of the exchange the result is of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // one per result
pub enum NetSide {
    Ping(PingDetails),
    Serve(ServeCounts),
}

/// A ping's record: its packet accounting and its bulk traffic, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingDetails {
    #[serde(flatten)]
    pub counts: PingCounts,
    /// Which path measured: `one-thread` (one thread sends and takes each
    /// reply) or `two-thread` (a sender and a receiver); as `config.path`.
    #[serde(default)]
    pub path: String,
    /// Whether the server's series (`server_rx`, `turnaround`) were
    /// recorded: not against a plain echo service (`--echo`), nor with
    /// `--no-split`.
    #[serde(default = "yes")]
    pub server_series: bool,
    /// The background traffic of `--bulk` (also in the result's `loads`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk: Option<BulkRecord>,
}

fn yes() -> bool {
    true
}

/// Packet accounting of a ping run (all counts; times in ns).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PingCounts {
    /// Requests the sender tried: `sent + send_errors`.
    pub attempts: u64,
    /// Requests the kernel accepted.
    pub sent: u64,
    /// Requests the kernel refused (e.g. ECONNREFUSED after an ICMP port unreachable).
    pub send_errors: u64,
    /// Distinct replies matched to a request.
    pub answered: u64,
    /// `sent − answered`: requests never answered (replies older than the tracking window included).
    pub lost: u64,
    /// Answered, but the round trip exceeded `--timeout` (still measured).
    pub late: u64,
    /// Extra copies of a reply already received.
    pub duplicated: u64,
    /// Replies that arrived after a reply to a later request.
    pub reordered: u64,
    /// Replies to requests no longer tracked (older than the window): in `lost`, not measured.
    pub stale: u64,
    /// Datagrams that are not a reply of this run (wrong size, magic, kind, session).
    pub bad_replies: u64,
    /// Replies naming a request never sent (a sequence number beyond those
    /// sent, or one whose send failed): ignored.
    #[serde(default)]
    pub unsent_replies: u64,
    /// Replies whose echoed send time differs from the client's own record
    /// of that request: the server rewrote it or the sequence number. Not
    /// measured; the request counts as lost unless a true reply comes.
    #[serde(default)]
    pub altered_replies: u64,
    /// Replies whose server times (RX latency + turnaround) are longer than
    /// the round trip measured: the round trip is recorded, not the
    /// server's samples.
    #[serde(default)]
    pub server_span_too_long: u64,
    /// ICMP port unreachable reports (ECONNREFUSED): nothing listened at the server's port.
    pub refused: u64,
    pub recv_errors: u64,
    /// Send slots skipped because the sender was more than a period late.
    pub send_overruns: u64,
    /// Replies taken while spinning (`--spin`): the thread never slept for them.
    #[serde(default)]
    pub spun_replies: u64,
    /// TX timestamps matched to a request, and requests left without one.
    pub tx_stamps: u64,
    pub tx_missing: u64,
    /// TX timestamps whose key matched no request or gave an implausible latency.
    pub tx_unmatched: u64,
    /// Replies without a kernel RX timestamp of the chosen kind.
    pub rx_missing: u64,
    /// Replies whose server had no RX timestamp.
    pub server_rx_missing: u64,
    /// Samples dropped because the clock went backwards (CLOCK_REALTIME stepped).
    pub clock_anomalies: u64,
    /// Requests sent after the last one answered.
    pub trailing_unanswered: u64,
    /// When the last fresh reply arrived, ns after the start.
    pub last_reply_at_ns: Option<u64>,
}

impl PingCounts {
    /// Fold in the other thread's counts (each thread fills its own fields).
    pub fn add(&mut self, o: &PingCounts) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += o.$f;)* };
        }
        sum!(
            attempts,
            sent,
            send_errors,
            answered,
            late,
            duplicated,
            reordered,
            stale,
            bad_replies,
            unsent_replies,
            altered_replies,
            server_span_too_long,
            refused,
            recv_errors,
            send_overruns,
            spun_replies,
            tx_stamps,
            tx_unmatched,
            rx_missing,
            server_rx_missing,
            clock_anomalies,
            trailing_unanswered
        );
        self.last_reply_at_ns = self.last_reply_at_ns.max(o.last_reply_at_ns);
    }

    /// With the figures that follow from both threads' counts filled in.
    pub fn derived(&self) -> PingCounts {
        PingCounts {
            lost: self.sent.saturating_sub(self.answered),
            tx_missing: self.sent.saturating_sub(self.tx_stamps),
            ..self.clone()
        }
    }
}

#[cfg(test)]
impl PingCounts {
    /// A test's counts: `answered` of `sent` requests, the rest lost, the
    /// last `trailing` of them unanswered.
    pub fn replies(sent: u64, answered: u64, trailing: u64) -> PingCounts {
        PingCounts {
            sent,
            answered,
            lost: sent.saturating_sub(answered),
            trailing_unanswered: trailing,
            ..Default::default()
        }
    }
}

/// The bulk traffic of a ping, shaped like the other loads' records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkRecord {
    /// Always `net`, kind `bulk-udp`, one worker.
    pub name: String,
    pub kind: String,
    pub workers: u32,
    pub target: String,
    pub payload_bytes: usize,
    /// `None`: unthrottled.
    pub requested_bytes_per_s: Option<u64>,
    pub achieved_bytes_per_s: f64,
    /// `achieved_bytes_per_s` in `rate_unit` (MB/s).
    pub achieved_rate: f64,
    pub rate_unit: String,
    pub bytes: u64,
    pub packets: u64,
    pub send_errors: u64,
    pub seconds: f64,
}

/// What a server saw (counts).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServeCounts {
    /// Valid requests, and replies the kernel accepted.
    pub requests: u64,
    pub replied: u64,
    pub send_errors: u64,
    /// Datagrams ignored, by reason, and their total.
    pub short: u64,
    pub foreign: u64,
    pub bad_version: u64,
    pub bad_length: u64,
    pub malformed: u64,
    pub oversized: u64,
    pub ignored: u64,
    pub recv_errors: u64,
    /// Requests without a kernel RX timestamp of the chosen kind.
    pub rx_missing: u64,
    pub clock_anomalies: u64,
    /// Bytes the bulk sink received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink_bytes: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::details::keys_read_back;
    use serde_json::Value;

    #[test]
    fn counts_of_both_threads_add_up() {
        let sender = PingCounts {
            attempts: 12,
            sent: 10,
            send_errors: 2,
            tx_stamps: 9,
            ..Default::default()
        };
        let receiver = PingCounts {
            last_reply_at_ns: Some(5),
            ..PingCounts::replies(0, 7, 4)
        };
        let mut c = PingCounts::default();
        c.add(&sender);
        c.add(&receiver);
        let d = c.derived();
        assert_eq!((d.sent, d.answered, d.lost, d.tx_missing), (10, 7, 3, 1));
        assert_eq!((d.attempts, d.last_reply_at_ns), (12, Some(5)));
    }

    #[test]
    fn ping_details_keep_their_keys_and_read_back() {
        let d = NetDetails {
            timestamping: Timestamps::Software,
            side: Some(NetSide::Ping(PingDetails {
                counts: PingCounts::replies(5, 4, 0),
                path: "one-thread".into(),
                server_series: true,
                bulk: Some(BulkRecord {
                    name: "net".into(),
                    kind: "bulk-udp".into(),
                    workers: 1,
                    target: "10.0.0.1:7358".into(),
                    payload_bytes: 1400,
                    requested_bytes_per_s: None,
                    achieved_bytes_per_s: 2e6,
                    achieved_rate: 2.0,
                    rate_unit: "MB/s".into(),
                    bytes: 2_000_000,
                    packets: 1429,
                    send_errors: 0,
                    seconds: 1.0,
                }),
            })),
        };
        let m = d.to_map();
        assert_eq!(m["timestamping"], Value::from("software"));
        assert_eq!(m["lost"], Value::from(1));
        assert_eq!(m["last_reply_at_ns"], Value::Null);
        assert_eq!(m["bulk"]["kind"], Value::from("bulk-udp"));
        assert_eq!(m["bulk"]["requested_bytes_per_s"], Value::Null);
        assert_eq!(m["path"], Value::from("one-thread"));
        assert_eq!(keys_read_back(&d).len(), 29);
        // Without bulk, and without the reply time: still a ping record.
        let mut m = d.to_map();
        m.remove("bulk");
        m.remove("last_reply_at_ns");
        let back: NetDetails = serde_json::from_value(Value::Object(m)).unwrap();
        assert!(matches!(
            back.side,
            Some(NetSide::Ping(PingDetails { bulk: None, .. }))
        ));
    }

    #[test]
    fn serve_details_keep_their_keys_and_read_back() {
        let d = NetDetails {
            timestamping: Timestamps::Hardware,
            side: Some(NetSide::Serve(ServeCounts {
                requests: 3,
                replied: 3,
                ..Default::default()
            })),
        };
        let keys = keys_read_back(&d);
        assert!(!keys.contains(&"sink_bytes".to_string()));
        assert_eq!(keys.len(), 14);
        let with_sink = NetDetails {
            side: Some(NetSide::Serve(ServeCounts {
                sink_bytes: Some(10),
                ..Default::default()
            })),
            ..d
        };
        assert_eq!(with_sink.to_map()["sink_bytes"], Value::from(10));
    }

    #[test]
    fn during_the_run_only_the_timestamping_is_known() {
        let d = NetDetails {
            timestamping: Timestamps::Software,
            side: None,
        };
        assert_eq!(keys_read_back(&d), ["timestamping"]);
    }
}
