//! Change detection: the runs from which a series is worse (or better)
//! beyond its own run-to-run noise.
//!
//! For each figure (max, p99.9, p99, p50) of a series in start order, every
//! split into runs before and runs after (at least [`Test::min_runs`] on each
//! side) is scored with the Mann-Whitney U statistic of "after is larger",
//! as a z score with the correction for ties. The best split counts when
//! |z| reaches [`Test::z`] (the chance that noise alone gives it anywhere in
//! a series of a hundred runs is about 0.2 %) and the medians of the two
//! sides differ by at least [`Test::min_change`]; the segments on either
//! side are then searched the same way (binary segmentation). Ranks make the
//! test indifferent to how the figure is distributed: a log-normal maximum
//! is tested as its logarithm would be, and one wild run weighs as one rank.

use super::runs::{RunFigure, RunPoint};

/// The thresholds of the test.
#[derive(Debug, Clone, Copy)]
pub struct Test {
    /// The |z| a split must reach.
    pub z: f64,
    /// The relative difference of the medians a change must reach (0.1: 10 %).
    pub min_change: f64,
    /// The fewest runs on each side of a split.
    pub min_runs: usize,
}

impl Default for Test {
    fn default() -> Test {
        Test {
            z: 4.0,
            min_change: 0.1,
            min_runs: 5,
        }
    }
}

/// One figure's shift at a change.
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    pub figure: RunFigure,
    /// Medians of the runs before and after, ns.
    pub before_ns: u64,
    pub after_ns: u64,
    pub z: f64,
}

impl Shift {
    /// The relative change of the median (0.4: 40 % worse).
    pub fn ratio(&self) -> f64 {
        self.after_ns as f64 / self.before_ns.max(1) as f64 - 1.0
    }
}

/// A change in a series: from run `at` on (index in start order), worse or better.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub at: usize,
    pub worse: bool,
    /// Every figure that passes the test at this split, the strongest first.
    pub shifts: Vec<Shift>,
}

/// The changes of a series, in run order.
pub fn changes(runs: &[RunPoint], test: &Test) -> Vec<Change> {
    let mut out = Vec::new();
    segment(runs, 0, test, &mut out);
    out.sort_by_key(|c| c.at);
    out
}

fn segment(runs: &[RunPoint], offset: usize, test: &Test, out: &mut Vec<Change>) {
    let Some((at, shifts)) = best_change(runs, test) else {
        return;
    };
    let worse = shifts[0].z > 0.0;
    out.push(Change {
        at: offset + at,
        worse,
        shifts,
    });
    segment(&runs[..at], offset, test, out);
    segment(&runs[at..], offset + at, test, out);
}

/// The split where the figures change most surely together (the largest
/// |sum of their z scores|: each figure's evidence placing it), with the
/// figures that pass the test there; else the best split of one figure.
fn best_change(runs: &[RunPoint], test: &Test) -> Option<(usize, Vec<Shift>)> {
    let figures: Vec<(RunFigure, Vec<u64>)> = RunFigure::ALL
        .into_iter()
        .filter_map(|f| Some((f, values_of(runs, f)?)))
        .collect();
    let scores: Vec<Vec<f64>> = figures.iter().map(|(_, v)| split_zs(v)).collect();
    let n = runs.len();
    let allowed = |at: usize| at >= test.min_runs.max(1) && n - at >= test.min_runs.max(1);
    let mut candidates: Vec<usize> = Vec::new();
    let summed = (1..n).filter(|&at| allowed(at)).max_by(|&a, &b| {
        let s = |at: usize| scores.iter().map(|z| z[at]).sum::<f64>().abs();
        s(a).total_cmp(&s(b))
    });
    candidates.extend(summed);
    for z in &scores {
        candidates.extend(
            (1..n)
                .filter(|&at| allowed(at))
                .max_by(|&a, &b| z[a].abs().total_cmp(&z[b].abs())),
        );
    }
    candidates.into_iter().find_map(|at| {
        let sign = scores.iter().map(|z| z[at]).sum::<f64>().signum();
        let mut shifts: Vec<Shift> = figures
            .iter()
            .zip(&scores)
            .filter(|(_, z)| z[at].signum() == sign)
            .filter_map(|((f, v), z)| shift_at(v, at, z[at], *f, test))
            .collect();
        shifts.sort_by(|a, b| b.z.abs().total_cmp(&a.z.abs()));
        (!shifts.is_empty()).then_some((at, shifts))
    })
}

/// The figure of every run, or `None` when some run lacks it.
fn values_of(runs: &[RunPoint], f: RunFigure) -> Option<Vec<u64>> {
    runs.iter().map(|r| r.get(f)).collect()
}

/// The shift at `at` when it passes the test.
fn shift_at(values: &[u64], at: usize, z: f64, figure: RunFigure, test: &Test) -> Option<Shift> {
    let s = Shift {
        figure,
        before_ns: median(&values[..at]),
        after_ns: median(&values[at..]),
        z,
    };
    let ratio = s.ratio();
    let big = if z > 0.0 {
        ratio >= test.min_change
    } else {
        ratio <= -test.min_change / (1.0 + test.min_change)
    };
    (z.abs() >= test.z && big).then_some(s)
}

/// The median of some values (the mean of the middle two for an even count).
pub fn median(values: &[u64]) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    match v.len() {
        0 => 0,
        n if n % 2 == 1 => v[n / 2],
        n => ((v[n / 2 - 1] as u128 + v[n / 2] as u128) / 2) as u64,
    }
}

/// Ranks from 1, ties given their mean rank, and the tie term Σ(t³ − t).
fn ranks(values: &[u64]) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| values[i]);
    let mut rank = vec![0.0; values.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            rank[k] = mean;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (rank, ties)
}

/// The z score of "the runs from `at` on are larger" at every split `at`
/// (index 0 unused), from one ranking.
fn split_zs(values: &[u64]) -> Vec<f64> {
    let n = values.len();
    let (rank, ties) = ranks(values);
    let total: f64 = rank.iter().sum();
    let mut before = 0.0;
    let mut out = vec![0.0; n.max(1)];
    for at in 1..n {
        before += rank[at - 1];
        out[at] = z_of(n, at, total - before, ties);
    }
    out
}

/// Mann-Whitney U of the `n - at` runs after (rank sum `after`) as a z
/// score, with the tie correction and a continuity correction of ½.
fn z_of(n: usize, at: usize, after: f64, ties: f64) -> f64 {
    let (n1, n2, nf) = (at as f64, (n - at) as f64, n as f64);
    let u = after - n2 * (n2 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 0.0;
    }
    let d = u - mean;
    let d = d.signum() * (d.abs() - 0.5).max(0.0);
    d / var.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(values: &[u64]) -> Vec<RunPoint> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| RunPoint {
                file: format!("r{i}.json").into(),
                start: String::new(),
                at: i as i64,
                kernel: "k".into(),
                max_ns: v,
                p999_ns: None,
                p99_ns: None,
                p50_ns: None,
                forecast: None,
            })
            .collect()
    }

    #[test]
    fn ranks_share_ties() {
        let (r, ties) = ranks(&[5, 1, 5, 3]);
        assert_eq!(r, [3.5, 1.0, 3.5, 2.0]);
        assert_eq!(ties, 6.0);
    }

    #[test]
    fn the_z_score_is_the_textbook_one() {
        // 3 before (1, 2, 3), 3 after (4, 5, 6): U = 9, mean 4.5, var 5.25.
        let z = split_zs(&[1, 2, 3, 4, 5, 6])[3];
        assert!((z - 4.0 / 5.25f64.sqrt()).abs() < 1e-12, "{z}");
        assert!(split_zs(&[4, 5, 6, 1, 2, 3])[3] < 0.0);
        assert_eq!(split_zs(&[7; 6])[3], 0.0);
    }

    #[test]
    fn a_step_is_found_where_it_is_and_a_flat_series_has_none() {
        let mut v: Vec<u64> = (0..60).map(|i| 100 + (i * 37 % 11)).collect();
        let flat = changes(&runs(&v), &Test::default());
        assert_eq!(flat, []);
        for x in &mut v[25..] {
            *x = *x * 14 / 10;
        }
        let c = changes(&runs(&v), &Test::default());
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].at, 25);
        assert!(c[0].worse);
        assert_eq!(c[0].shifts[0].figure, RunFigure::Max);
        // Worse again later: a second change.
        for x in &mut v[45..] {
            *x = *x * 14 / 10;
        }
        let c = changes(&runs(&v), &Test::default());
        let found: Vec<(usize, bool)> = c.iter().map(|c| (c.at, c.worse)).collect();
        assert_eq!(found, [(25, true), (45, true)], "{c:?}");
    }

    #[test]
    fn a_change_smaller_than_the_minimum_is_not_named() {
        let mut v: Vec<u64> = (0..40).map(|i| 1000 + (i * 37 % 11)).collect();
        for x in &mut v[20..] {
            *x += 50; // certain, but 5 %
        }
        assert_eq!(changes(&runs(&v), &Test::default()), []);
        let c = changes(
            &runs(&v),
            &Test {
                min_change: 0.04,
                ..Test::default()
            },
        );
        assert_eq!(c.len(), 1);
    }

    /// `n` runs around `level` with the same small spread as the tests above.
    fn around(level: u64, n: usize) -> Vec<u64> {
        (0..n as u64).map(|i| level + (i * 37 % 11)).collect()
    }

    #[test]
    fn a_change_to_better_is_named_from_the_mirrored_minimum() {
        // 10 % worse is the minimum; better, its mirror: the medians 1/1.1 apart.
        let mut v = around(1105, 20);
        v.extend(around(1000, 20));
        let c = changes(&runs(&v), &Test::default());
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].at, c[0].worse), (20, false));
        let s = &c[0].shifts[0];
        assert_eq!((s.before_ns, s.after_ns), (1110, 1005));
        assert!(s.z <= -Test::default().z, "{s:?}");
        // 5 % better is as certain, but below the minimum.
        let mut v = around(1060, 20);
        v.extend(around(1000, 20));
        assert_eq!(changes(&runs(&v), &Test::default()), []);
    }

    #[test]
    fn every_change_leaves_the_fewest_runs_on_both_sides() {
        // The strongest split puts the last 3 runs after it; 5 are the fewest.
        let test = Test {
            z: 2.0,
            ..Test::default()
        };
        let mut v = around(1000, 40);
        for x in &mut v[37..] {
            *x *= 3;
        }
        let mut flipped = v.clone();
        flipped.reverse();
        for v in [v, flipped] {
            let c = changes(&runs(&v), &test);
            assert!(
                c.iter()
                    .all(|c| c.at >= test.min_runs && v.len() - c.at >= test.min_runs),
                "{c:?}"
            );
        }
    }

    #[test]
    fn the_ratio_is_the_relative_change_of_the_medians() {
        let shift = |before_ns, after_ns| Shift {
            figure: RunFigure::Max,
            before_ns,
            after_ns,
            z: 5.0,
        };
        assert!((shift(100, 140).ratio() - 0.4).abs() < 1e-12);
        assert!((shift(200, 150).ratio() + 0.25).abs() < 1e-12);
        // A median of 0 counts as 1 ns.
        assert_eq!(shift(0, 3).ratio(), 2.0);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[9]), 9);
        assert_eq!(median(&[5, 1, 4, 2, 3]), 3);
        assert_eq!(median(&[40, 10, 30, 20]), 25);
        assert_eq!(median(&[3, 1, 4, 2]), 2);
        // The mean of the middle two does not overflow.
        assert_eq!(median(&[u64::MAX, u64::MAX - 2]), u64::MAX - 1);
    }

    #[test]
    fn ties_shrink_the_variance_as_the_textbook_says() {
        // 1 1 | 2 2: ranks 1.5 1.5 | 3.5 3.5, U = 4, mean 2, tie term 12,
        // var = 2·2/12 · (5 − 12/(4·3)) = 4/3; continuity: |4 − 2| − ½.
        let z = split_zs(&[1, 1, 2, 2])[2];
        assert!((z - 1.5 / (4.0f64 / 3.0).sqrt()).abs() < 1e-12, "{z}");
        // 2 1 1 | 3 3 3: ranks 3 1.5 1.5 | 5 5 5, U = 9, mean 4.5, tie term 30,
        // var = 9/12 · (7 − 30/30) = 4.5.
        let z = split_zs(&[2, 1, 1, 3, 3, 3])[3];
        assert!((z - 4.0 / 4.5f64.sqrt()).abs() < 1e-12, "{z}");
    }
}
