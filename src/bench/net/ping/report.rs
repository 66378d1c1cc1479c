//! The end of a ping run: its details and notes in the result, the bulk
//! traffic's record, and the verdicts that make it an environment failure
//! (the server went away, no hardware timestamps arrived).

use super::{PingConfig, GONE_AFTER};
use crate::bench::threads::Slot;
use crate::engine::Finisher;
use crate::load::net::{BulkReport, BulkSender};
use crate::result::details::net::{BulkRecord, NetDetails, NetSide, PingCounts, PingDetails};
use crate::result::details::Details;
use crate::result::RunResult;
use crate::units::human_duration;
use std::sync::{Arc, Mutex};

/// Why a finished run is an environment failure (exit 3), if it is one.
pub(super) fn verdict(cfg: &PingConfig, c: &PingCounts) -> Option<String> {
    let saved = cfg
        .common
        .setup
        .output
        .json
        .as_ref()
        .map(|p| format!("; results written to {}", p.display()))
        .unwrap_or_default();
    if let Some(msg) = peer_gone(cfg, c) {
        return Some(format!("{msg}{saved}"));
    }
    if cfg.common.timestamps.is_hardware()
        && c.sent > 0
        && c.tx_stamps == 0
        && c.rx_missing == c.answered
    {
        return Some(format!(
            "no hardware timestamps arrived: enable them on the interface (e.g. hwstamp_ctl -i IF -t 1 -r 1) or use --timestamps software{saved}"
        ));
    }
    None
}

/// The one-line verdict when the server stopped answering (exit 3).
fn peer_gone(cfg: &PingConfig, c: &PingCounts) -> Option<String> {
    let attempts = c.sent + c.send_errors;
    let refused = if c.refused > 0 {
        format!(
            ", {} ICMP port unreachable (nothing listens there any more)",
            c.refused
        )
    } else {
        String::new()
    };
    if attempts > 0 && c.answered == 0 {
        return Some(format!(
            "no reply from {} to any of {attempts} packets{refused}: is 'rtlat net serve' running there, and the port open?",
            cfg.peer
        ));
    }
    if c.trailing_unanswered >= GONE_AFTER {
        let since = c
            .last_reply_at_ns
            .map(crate::units::secs)
            .unwrap_or_else(|| "?".into());
        return Some(format!(
            "{} stopped answering after +{since}: the last {} packets got no reply ({} lost of {} sent{refused})",
            cfg.peer, c.trailing_unanswered, c.lost, c.sent
        ));
    }
    None
}

/// The result's view of a bulk report, shaped like the other loads' records.
fn bulk_record(r: &BulkReport, payload: usize) -> BulkRecord {
    BulkRecord {
        name: "net".into(),
        kind: "bulk-udp".into(),
        workers: 1,
        target: r.target.clone(),
        payload_bytes: payload,
        requested_bytes_per_s: r.requested_bytes_per_s,
        achieved_bytes_per_s: r.achieved_bytes_per_s,
        achieved_rate: r.achieved_bytes_per_s / 1e6,
        rate_unit: "MB/s".into(),
        bytes: r.bytes,
        packets: r.packets,
        send_errors: r.send_errors,
        seconds: r.seconds,
    }
}

/// The packet accounting as a note.
fn packets_note(c: &PingCounts, timeout_ns: u64) -> String {
    format!(
        "packets: {} sent, {} answered, {} lost, {} late (> {}), {} duplicated, {} reordered{}{}",
        c.sent,
        c.answered,
        c.lost,
        c.late,
        human_duration(timeout_ns),
        c.duplicated,
        c.reordered,
        if c.send_errors > 0 {
            format!(", {} refused by the kernel", c.send_errors)
        } else {
            String::new()
        },
        if c.bad_replies + c.stale > 0 {
            format!(
                ", {} bad and {} stale replies ignored",
                c.bad_replies, c.stale
            )
        } else {
            String::new()
        }
    )
}

/// The replies that did not fit the client's record, by reason, as a note;
/// `None` when every reply fitted.
fn forged_note(c: &PingCounts) -> Option<String> {
    let reasons = [
        (c.unsent_replies, "named a request never sent"),
        (c.altered_replies, "echoed another send time than the one sent"),
        (
            c.server_span_too_long,
            "carried server times longer than the round trip (round trip kept, server samples dropped)",
        ),
    ];
    let said: Vec<String> = reasons
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect();
    (!said.is_empty()).then(|| {
        format!(
            "replies that do not fit the client's own record (a broken or forging server): {}",
            said.join(", ")
        )
    })
}

/// Stop the bulk traffic, note what it achieved; its record.
fn stop_bulk(sender: BulkSender, payload: usize, r: &mut RunResult) -> BulkRecord {
    let report = sender.stop();
    let requested = report
        .requested_bytes_per_s
        .map(|b| format!("{:.3} MB/s requested, ", b as f64 / 1e6))
        .unwrap_or_else(|| "unthrottled, ".into());
    r.notes.push(format!(
        "bulk UDP to {}: {requested}{:.3} MB/s achieved ({} packets of {payload} bytes in {:.3}s, {} send errors)",
        report.target,
        report.achieved_bytes_per_s / 1e6,
        report.packets,
        report.seconds,
        report.send_errors
    ));
    bulk_record(&report, payload)
}

/// The last word on the result: the details, the notes, the bulk record.
pub(super) fn finisher(
    counts: Arc<Mutex<PingCounts>>,
    bulk: Slot<BulkSender>,
    cfg: PingConfig,
) -> Finisher {
    Box::new(move |r: &mut RunResult| {
        let mut c = counts.lock().map(|g| g.derived()).unwrap_or_default();
        if !cfg.split {
            // No timestamps were asked for: none is missing.
            c.tx_missing = 0;
        }
        r.notes.push(packets_note(&c, cfg.timeout_ns));
        r.notes.extend(forged_note(&c));
        if c.tx_missing > 0 || c.rx_missing > 0 {
            r.notes.push(format!(
                "timestamps missing: {} TX, {} RX (those packets have no tx/rx sample)",
                c.tx_missing, c.rx_missing
            ));
        }
        if let Some(spin) = cfg.spin_ns {
            let how = if cfg.spin_by_default {
                format!("spinning up to {} by default", human_duration(spin))
            } else {
                format!("--spin {}", human_duration(spin))
            };
            r.notes.push(format!(
                "{} of {} replies taken while spinning ({how}), the rest after blocking",
                c.spun_replies, c.answered,
            ));
        }
        if c.send_overruns > 0 {
            r.notes.push(format!(
                "{} send slots skipped: the sender was more than a period late (counted as tx overruns)",
                c.send_overruns
            ));
        }
        let bulk = bulk.take().map(|sender| {
            let payload = cfg.bulk.as_ref().map_or(0, |b| b.payload);
            stop_bulk(sender, payload, r)
        });
        if let Some(rec) = &bulk {
            r.loads.push(serde_json::to_value(rec).unwrap_or_default());
        }
        let details = NetDetails {
            timestamping: cfg.common.timestamps,
            side: Some(NetSide::Ping(PingDetails {
                counts: c,
                path: cfg.path.name().into(),
                server_series: cfg.split && !cfg.echo,
                bulk,
            })),
        };
        r.details.extend(details.to_map());
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::net::ping::Pace;
    use crate::bench::net::Common;
    use crate::engine::RunControl;
    use crate::result::details::net::Timestamps;
    use std::collections::BTreeSet;
    use std::net::SocketAddr;

    #[test]
    fn peer_gone_verdicts() {
        let cfg_peer: SocketAddr = "10.0.0.1:7357".parse().unwrap();
        let a = PingCounts::replies(100, 0, 100);
        let cfg = test_cfg(cfg_peer);
        assert!(peer_gone(&cfg, &a).unwrap().contains("any of 100"));
        let b = PingCounts {
            last_reply_at_ns: Some(1_500_000_000),
            ..PingCounts::replies(100, 60, 40)
        };
        assert!(peer_gone(&cfg, &b).unwrap().contains("after +1.500s"));
        let ok = PingCounts::replies(100, 97, 1);
        assert_eq!(peer_gone(&cfg, &ok), None);
        assert_eq!(verdict(&cfg, &ok), None);
    }

    #[test]
    fn replies_that_do_not_fit_are_noted_by_reason() {
        assert_eq!(forged_note(&PingCounts::replies(10, 10, 0)), None);
        let c = PingCounts {
            unsent_replies: 2,
            server_span_too_long: 3,
            ..PingCounts::replies(10, 8, 0)
        };
        let note = forged_note(&c).unwrap();
        assert!(note.contains("2 named a request never sent"), "{note}");
        assert!(note.contains("3 carried server times longer"), "{note}");
        assert!(!note.contains("echoed"), "{note}");
    }

    #[test]
    fn no_hardware_stamps_is_a_verdict() {
        let mut cfg = test_cfg("10.0.0.1:7357".parse().unwrap());
        cfg.common.timestamps = Timestamps::Hardware;
        cfg.common.setup.output.json = Some("r.json".into());
        let c = PingCounts {
            rx_missing: 10,
            ..PingCounts::replies(10, 10, 0)
        };
        let v = verdict(&cfg, &c).unwrap();
        assert!(v.contains("no hardware timestamps") && v.ends_with("results written to r.json"));
    }

    #[test]
    fn config_keys_are_those_of_the_result_file() {
        let v = serde_json::to_value(test_cfg("10.0.0.1:7357".parse().unwrap())).unwrap();
        let keys: BTreeSet<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        let expected: BTreeSet<&str> = [
            "role",
            "target",
            "peer",
            "bind",
            "period_ns",
            "rate_per_s",
            "size",
            "duration_ns",
            "loops",
            "max_latency_ns",
            "interval_ns",
            "save_every_ns",
            "timeout_ns",
            "timestamps",
            "clock",
            "session",
            "cpu",
            "bulk",
            "path",
            "split",
            "echo",
            "busy_poll_us",
            "spin_ns",
            "spin_by_default",
            "pace",
        ]
        .into();
        assert_eq!(keys, expected);
        assert_eq!(v["timestamps"], "software");
        assert_eq!(v["clock"], "realtime");
        assert_eq!(v["path"], "one-thread");
    }

    fn test_cfg(peer: SocketAddr) -> PingConfig {
        PingConfig {
            role: "ping",
            target: peer.to_string(),
            peer,
            bind: "0.0.0.0:0".parse().unwrap(),
            period_ns: 1_000_000,
            rate_per_s: 1000.0,
            size: 64,
            timeout_ns: 1_000_000_000,
            session: 1,
            bulk: None,
            path: super::super::Path::OneThread,
            split: true,
            echo: false,
            explain: None,
            explain_stacks: false,
            busy_poll_us: None,
            spin_ns: None,
            spin_by_default: false,
            pace: Pace::Sleep,
            serve_on: None,
            common: Common {
                control: RunControl {
                    loops: Some(100),
                    interval_ns: 1_000_000_000,
                    save_every_ns: 5_000_000_000,
                    ..RunControl::default()
                },
                timestamps: Timestamps::Software,
                clock: "realtime",
                cpu: None,
                setup: Default::default(),
            },
        }
    }
}
