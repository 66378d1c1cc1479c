//! A deterministic fuzz test of every importer: the real fixtures, cut,
//! flipped, shuffled and given absurd numbers. Every input must give a result
//! or an error with a line number — never a panic — and every result must pass
//! the readers' checks and render.

use super::{by_name, parse};
use crate::render::{check, svg, text, Loaded};
use std::path::{Path, PathBuf};

/// (format, fixture file): every fixture under tests/fixtures/import.
pub(super) const FIXTURES: [(&str, &str); 31] = [
    ("cyclictest-json", "cyclictest-hist.json"),
    ("cyclictest-json", "cyclictest.json"),
    ("cyclictest-hist", "cyclictest-hist.txt"),
    ("cyclictest-status", "cyclictest-q.txt"),
    ("cyclictest-status", "cyclictest-q-published.txt"),
    ("cyclictest-status", "cyclictest-live.txt"),
    ("cyclictest-verbose", "cyclictest-v.txt"),
    ("xenomai", "xenomai-latency.txt"),
    ("rtla-timerlat", "rtla-timerlat-hist.txt"),
    ("jitterdebugger", "jitterdebugger-results.json"),
    ("sockperf", "sockperf-full-log.csv"),
    ("oslat", "oslat.txt"),
    ("oslat", "oslat-2cpu-z.txt"),
    ("rtla-osnoise", "rtla-osnoise-hist.txt"),
    ("rtla-osnoise-top", "rtla-osnoise-top.txt"),
    ("cyclictest-hist", "cyclictest-2.10-hist.txt"),
    ("cyclictest-hist", "cyclictest-2.10-histofall-histfile.txt"),
    ("cyclictest-hist", "cyclictest-1.10-histofall.txt"),
    ("cyclictest-status", "cyclictest-2.10-N.txt"),
    ("cyclictest-status", "cyclictest-2.10-N-prompt.txt"),
    ("oslat", "oslat-1.10.txt"),
    ("oslat", "oslat-2.10.txt"),
    ("sockperf", "sockperf-3.10-full-log.csv"),
    ("sockperf", "sockperf-3.3-full-log.csv"),
    ("xenomai", "xenomai-klatency-backlog.txt"),
    ("rtla-osnoise", "rtla-osnoise-hist-zero.txt"),
    ("rtla-osnoise-top", "rtla-osnoise-top-prompt.txt"),
    ("rtai", "rtai-kernel-latency.txt"),
    ("rtai", "rtai-user-latency.txt"),
    ("cyclictest-verbose", "cyclictest-2.10-vN-prompt.txt"),
    ("rteval", "rteval-3.8-summary.xml"),
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

pub(super) fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn mutate(input: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = input.to_vec();
    let lines =
        |v: &[u8]| -> Vec<Vec<u8>> { v.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect() };
    match rng.below(7) {
        0 => v.truncate(rng.below(v.len() + 1)),
        1 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(v.len());
                if let Some(b) = v.get_mut(i) {
                    *b = b"0123456789-.,:|{}[]\" \n\xffaz#"[rng.below(26)];
                }
            }
        }
        2 => {
            let mut l = lines(&v);
            if !l.is_empty() {
                let i = rng.below(l.len());
                l.remove(i);
            }
            v = l.join(&b'\n');
        }
        3 => {
            let mut l = lines(&v);
            if !l.is_empty() {
                let i = rng.below(l.len());
                let line = l[i].clone();
                l.insert(rng.below(l.len()), line);
            }
            v = l.join(&b'\n');
        }
        4 => {
            let mut l = lines(&v);
            let (a, b) = (rng.below(l.len()), rng.below(l.len()));
            if a < l.len() && b < l.len() {
                l.swap(a, b);
            }
            v = l.join(&b'\n');
        }
        5 => {
            // Replace a run of digits with an absurd number.
            let starts: Vec<usize> = (0..v.len())
                .filter(|&i| v[i].is_ascii_digit() && (i == 0 || !v[i - 1].is_ascii_digit()))
                .collect();
            if !starts.is_empty() {
                let s = starts[rng.below(starts.len())];
                let e = (s..v.len())
                    .find(|&i| !v[i].is_ascii_digit())
                    .unwrap_or(v.len());
                let absurd: [&[u8]; 6] = [
                    b"99999999999999999999999",
                    b"18446744073709551615",
                    b"-1",
                    b"nan",
                    b"1e308",
                    b"0",
                ];
                v.splice(s..e, absurd[rng.below(absurd.len())].iter().copied());
            }
        }
        _ => {
            let n = rng.below(300);
            v = (0..n).map(|_| (rng.next() & 0xff) as u8).collect();
        }
    }
    v
}

#[test]
fn importers_never_panic_and_only_produce_valid_results() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut ok, mut refused) = (0, 0);
    for (format, name) in FIXTURES {
        let format = by_name(format).expect("a format");
        let original = fixture(name);
        let r = parse(format, &mut &original[..], name, None)
            .unwrap_or_else(|e| panic!("{name} does not import: line {}: {}", e.line, e.msg));
        check(&r).unwrap_or_else(|e| panic!("{name}: {e}"));
        for _ in 0..200 {
            let input = mutate(&original, &mut rng);
            match parse(format, &mut &input[..], name, None) {
                Ok(r) => {
                    ok += 1;
                    check(&r).unwrap_or_else(|e| {
                        panic!(
                            "{name}: an accepted mutation gives an invalid result: {e}\n{}",
                            String::from_utf8_lossy(&input)
                        )
                    });
                    let l = Loaded {
                        path: PathBuf::from(name),
                        label: "fuzz".into(),
                        result: r,
                    };
                    let _ = text::report(&l);
                    let _ = svg::document(&svg::report_plots(&l));
                }
                Err(e) => {
                    refused += 1;
                    assert!(!e.msg.is_empty());
                    assert!(!e.msg.contains('\n'), "multi-line error: {}", e.msg);
                    assert!(
                        e.msg.contains("expected"),
                        "{name}: error without what was expected: {}",
                        e.msg
                    );
                }
            }
        }
    }
    assert!(ok > 50 && refused > 50, "ok {ok}, refused {refused}");
}

#[test]
fn garbage_and_empty_input_are_refused_with_a_line() {
    for (format, _) in FIXTURES {
        let format = by_name(format).expect("a format");
        for input in [
            &b""[..],
            b"\n\n",
            b"garbage\n",
            b"\x00\x01\x02",
            b"{\"a\": [1, 2",
        ] {
            let e = parse(format, &mut &input[..], "x", None).expect_err("refused");
            assert!(e.msg.contains("expected"), "{format:?}: {}", e.msg);
        }
    }
}
