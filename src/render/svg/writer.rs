//! A small deterministic SVG writer.
//!
//! Every plot is a [`Plot`]: two axes (linear, or log10 with values already
//! in exponents), polylines, legend keys and vertical markers, drawn in a
//! fixed 960×400 frame with the legend outside the data area on the right.
//! Numbers are printed with one decimal, so the same result always gives the
//! same bytes. No fonts, scripts or external references: `font-family:
//! sans-serif` and whatever the viewer has.

use super::math::{pow10, Logs};
use std::fmt::Write;

pub const WIDTH: f64 = 960.0;
pub const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 78.0;
const PLOT_RIGHT: f64 = 760.0;
const PLOT_BOTTOM: f64 = HEIGHT - 52.0;
const LEGEND_X: f64 = 776.0;

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

impl Dash {
    fn attr(self) -> &'static str {
        match self {
            Dash::Solid => "",
            Dash::Dashed => " stroke-dasharray=\"6 3\"",
            Dash::Dotted => " stroke-dasharray=\"1.5 3\"",
        }
    }
}

/// An axis. For a log axis, `min`, `max`, tick positions and plotted values are log10 of the data.
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub min: f64,
    pub max: f64,
    pub ticks: Vec<(f64, String)>,
}

impl Axis {
    /// Where `v` stands between the axis' ends, 0 to 1.
    fn fraction(&self, v: f64) -> f64 {
        let span = self.max - self.min;
        let f = if span > 0.0 {
            (v - self.min) / span
        } else {
            0.0
        };
        f.clamp(0.0, 1.0)
    }
}

/// A polyline in axis coordinates; `None` breaks it.
#[derive(Debug, Clone)]
pub struct Polyline {
    pub color: usize,
    pub dash: Dash,
    pub width: f64,
    pub points: Vec<Option<(f64, f64)>>,
    /// A dot at every point as well (one per run of a trend).
    pub dots: bool,
}

/// One legend entry; `color: None` is drawn in grey (a style key or a remark).
#[derive(Debug, Clone)]
pub struct Key {
    pub text: String,
    /// Smaller lines below, one per `\n` (e.g. the series' maximum).
    pub detail: Option<String>,
    pub color: Option<usize>,
    pub dash: Dash,
    /// Remarks have no line sample.
    pub line: bool,
}

impl Key {
    /// A series' entry: a solid line sample in its colour.
    pub fn series(text: String, detail: Option<String>, color: usize) -> Key {
        Key {
            text,
            detail,
            color: Some(color),
            dash: Dash::Solid,
            line: true,
        }
    }

    /// A style entry: a grey line sample with `dash`.
    pub fn style(text: &str, dash: Dash) -> Key {
        Key {
            text: text.into(),
            detail: None,
            color: None,
            dash,
            line: true,
        }
    }

    /// A grey remark without a line sample.
    pub fn remark(text: String, detail: Option<String>) -> Key {
        Key {
            text,
            detail,
            color: None,
            dash: Dash::Solid,
            line: false,
        }
    }

    /// The remark for `left_out` series not drawn, if any.
    pub fn not_drawn(left_out: usize) -> Option<Key> {
        (left_out > 0).then(|| Key::remark(format!("{left_out} more not drawn"), None))
    }
}

/// A vertical line at `x` (axis coordinates) with a label.
#[derive(Debug, Clone)]
pub struct Marker {
    pub x: f64,
    pub text: String,
}

/// A hatched region in axis coordinates with a label: what a plot must not
/// pass for data (samples beyond an imported histogram's range).
#[derive(Debug, Clone)]
pub struct Band {
    pub x: (f64, f64),
    pub y: (f64, f64),
    /// The series' colour, for the hatch.
    pub color: usize,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    pub subtitle: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Polyline>,
    pub keys: Vec<Key>,
    pub markers: Vec<Marker>,
    pub bands: Vec<Band>,
    /// Shown in the middle when there is nothing to draw.
    pub empty: Option<String>,
}

/// Escape text for XML and HTML; `://` is broken up so no URL scheme appears in the output.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.replace("://", ":&#47;&#47;")
}

/// One decimal, never `-0.0`.
fn n(v: f64) -> String {
    let s = format!("{v:.1}");
    if s == "-0.0" {
        "0.0".into()
    } else {
        s
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// The smallest of 1, 2, 5 × 10^k that is ≥ `v` (v > 0).
pub fn nice_up(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let mut p = pow10(v.lg().floor());
    while p < v * (1.0 - 1e-12) {
        p = if p * 2.0 >= v * (1.0 - 1e-12) {
            p * 2.0
        } else if p * 5.0 >= v * (1.0 - 1e-12) {
            p * 5.0
        } else {
            p * 10.0
        };
    }
    p
}

/// Format a value with as many decimals as its step needs.
fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.lg().floor()) as usize
    };
    let s = format!("{v:.decimals$}");
    if s.starts_with('-')
        && s.trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
    {
        s[1..].to_string()
    } else {
        s
    }
}

/// A linear axis covering `[lo, hi]` with about six ticks at round values.
pub fn linear_axis(label: &str, lo: f64, hi: f64) -> Axis {
    let (lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if hi <= lo {
        hi = lo + if lo.abs() > 0.0 { lo.abs() * 0.1 } else { 1.0 };
    }
    let step = nice_up((hi - lo) / 6.0);
    let min = (lo / step).floor() * step;
    let max = (hi / step).ceil() * step;
    let count = (((max - min) / step).round() as usize).min(40);
    let ticks = (0..=count)
        .map(|k| {
            let v = min + k as f64 * step;
            (v, tick_label(v, step))
        })
        .collect();
    Axis {
        label: label.into(),
        min,
        max,
        ticks,
    }
}

/// A log axis over decades `[floor(lo), ceil(hi)]` (exponents), ticks at every decade.
pub fn log_axis(label: &str, lo_exp: f64, hi_exp: f64, fmt: fn(i32) -> String) -> Axis {
    let lo = if lo_exp.is_finite() {
        lo_exp.floor()
    } else {
        0.0
    };
    let mut hi = if hi_exp.is_finite() {
        hi_exp.ceil()
    } else {
        1.0
    };
    if hi <= lo {
        hi = lo + 1.0;
    }
    let ticks = (lo as i32..=hi as i32)
        .take(64)
        .map(|k| (k as f64, fmt(k)))
        .collect();
    Axis {
        label: label.into(),
        min: lo,
        max: hi,
        ticks,
    }
}

/// `10^k` as a plain decimal number (`0.01`, `1`, `1000`), or `1e9` beyond a million.
pub fn decade(k: i32) -> String {
    match k {
        k if !(-6..=6).contains(&k) => format!("1e{k}"),
        k if k < 0 => format!("{:.*}", (-k) as usize, 10f64.powi(k)),
        k => format!("{}", 10u64.pow(k as u32)),
    }
}

/// The height of a line of band labels.
const BAND_LINE: f64 = 13.0;

/// A `<text>` at `(x, y)`; `attrs` (each with a leading space) follow the position.
fn text(o: &mut String, (x, y): (f64, f64), attrs: &str, content: &str) {
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\"{attrs}>{}</text>",
        n(x),
        n(y),
        escape(content)
    );
}

/// A `<line>` from `a` to `b` with `attrs` (stroke and so on).
fn line(o: &mut String, a: (f64, f64), b: (f64, f64), attrs: &str) {
    let _ = writeln!(
        o,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {attrs}/>",
        n(a.0),
        n(a.1),
        n(b.0),
        n(b.1)
    );
}

impl Plot {
    fn px(&self, x: f64) -> f64 {
        LEFT + self.x.fraction(x) * (PLOT_RIGHT - LEFT)
    }

    fn py(&self, y: f64) -> f64 {
        PLOT_BOTTOM - self.y.fraction(y) * (PLOT_BOTTOM - TOP)
    }

    /// The plot's elements in a 960×400 frame at the origin.
    fn body(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
            n(WIDTH),
            n(HEIGHT)
        );
        let bold = " text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\" fill=\"#222222\"";
        text(o, (WIDTH / 2.0, 24.0), bold, &truncate(&self.title, 100));
        for (i, line) in self.subtitle.lines().take(2).enumerate() {
            let at = (WIDTH / 2.0, 42.0 + 14.0 * i as f64);
            let sub = " text-anchor=\"middle\" font-size=\"11\" fill=\"#444444\"";
            text(o, at, sub, &truncate(line, 150));
        }
        // Grid and ticks.
        let grid = "stroke=\"#e6e6e6\"";
        for (v, label) in &self.x.ticks {
            let x = self.px(*v);
            line(o, (x, TOP), (x, PLOT_BOTTOM), grid);
            let tick = " text-anchor=\"middle\" font-size=\"11\" fill=\"#333333\"";
            text(o, (x, PLOT_BOTTOM + 16.0), tick, label);
        }
        for (v, label) in &self.y.ticks {
            let y = self.py(*v);
            line(o, (LEFT, y), (PLOT_RIGHT, y), grid);
            let tick = " text-anchor=\"end\" font-size=\"11\" fill=\"#333333\"";
            text(o, (LEFT - 6.0, y + 4.0), tick, label);
        }
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>",
            n(LEFT),
            n(TOP),
            n(PLOT_RIGHT - LEFT),
            n(PLOT_BOTTOM - TOP)
        );
        let label = " text-anchor=\"middle\" font-size=\"12\" fill=\"#222222\"";
        text(
            o,
            ((LEFT + PLOT_RIGHT) / 2.0, HEIGHT - 14.0),
            label,
            &self.x.label,
        );
        let yc = n((TOP + PLOT_BOTTOM) / 2.0);
        let turned = format!("{label} transform=\"rotate(-90 18.0 {yc})\"");
        text(o, (18.0, (TOP + PLOT_BOTTOM) / 2.0), &turned, &self.y.label);
        for m in &self.markers {
            let x = self.px(m.x);
            let dashed = "stroke=\"#555555\" stroke-dasharray=\"4 4\"";
            line(o, (x, TOP), (x, PLOT_BOTTOM), dashed);
            let note = " font-size=\"10\" fill=\"#555555\"";
            text(o, (x + 3.0, TOP + 12.0), note, &truncate(&m.text, 40));
        }
        // Labels stacked above the highest band, one line each.
        let top = self
            .bands
            .iter()
            .map(|b| self.py(b.y.1))
            .fold(PLOT_BOTTOM, f64::min);
        // Every band before any label, so that no band covers another's
        // label; each label on a white halo, legible over the hatching.
        for b in &self.bands {
            self.band(o, b);
        }
        let count = self.bands.len();
        for (row, b) in self.bands.iter().enumerate() {
            let up = BAND_LINE * (count - 1 - row) as f64;
            let label_y = (top - 4.0 - up).max(TOP + 10.0 + BAND_LINE * row as f64);
            self.band_label(o, b, label_y);
        }
        for series in &self.lines {
            let d = self.path(series);
            if d.is_empty() {
                continue;
            }
            let _ = writeln!(
                o,
                "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"{}/>",
                PALETTE[series.color % PALETTE.len()],
                n(series.width),
                series.dash.attr()
            );
            if series.dots {
                self.dots(o, series);
            }
        }
        if let Some(msg) = &self.empty {
            let at = ((LEFT + PLOT_RIGHT) / 2.0, (TOP + PLOT_BOTTOM) / 2.0);
            let grey = " text-anchor=\"middle\" font-size=\"14\" fill=\"#777777\"";
            text(o, at, grey, msg);
        }
        // Legend, outside the data area.
        let mut y = TOP + 10.0;
        for k in &self.keys {
            let color = k
                .color
                .map(|c| PALETTE[c % PALETTE.len()])
                .unwrap_or("#555555");
            let text_x = if k.line {
                let sample = format!("stroke=\"{color}\" stroke-width=\"2.0\"{}", k.dash.attr());
                line(o, (LEGEND_X, y), (LEGEND_X + 22.0, y), &sample);
                LEGEND_X + 28.0
            } else {
                LEGEND_X
            };
            let entry = " font-size=\"11\" fill=\"#222222\"";
            text(o, (text_x, y + 4.0), entry, &truncate(&k.text, 24));
            for d in k.detail.iter().flat_map(|d| d.lines()) {
                let detail = " font-size=\"10\" fill=\"#555555\"";
                text(o, (text_x, y + 16.0), detail, &truncate(d, 26));
                y += 12.0;
            }
            y += 18.0;
        }
    }

    /// Where a band is drawn, in pixels: left and right.
    fn band_x(&self, b: &Band) -> (f64, f64) {
        (self.px(b.x.0), self.px(b.x.1).max(self.px(b.x.0) + 4.0))
    }

    /// A band: a light fill, 45° hatch lines in the series' colour and a
    /// dashed outline.
    fn band(&self, o: &mut String, b: &Band) {
        let (x0, x1) = self.band_x(b);
        let (y0, y1) = (self.py(b.y.1), self.py(b.y.0));
        let (w, h) = (x1 - x0, (y1 - y0).max(2.0));
        let color = PALETTE[b.color % PALETTE.len()];
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fbe3d6\" fill-opacity=\"0.5\" stroke=\"{color}\" stroke-dasharray=\"3 2\"/>",
            n(x0),
            n(y0),
            n(w),
            n(h)
        );
        // Hatch: lines x + y = c through the rectangle, clipped to it.
        let mut hatch = String::new();
        let mut c = x0 + y0 + 6.0;
        while c < x1 + y0 + h {
            let (ax, ay) = ((c - y0).min(x1), y0.max(c - x1));
            let (bx, by) = (x0.max(c - y0 - h), (c - x0).min(y0 + h));
            if ax > bx {
                let _ = write!(hatch, "M{},{} L{},{} ", n(ax), n(ay), n(bx), n(by));
            }
            c += 6.0;
        }
        if !hatch.is_empty() {
            let _ = writeln!(
                o,
                "<path d=\"{}\" stroke=\"{color}\" stroke-width=\"0.8\" fill=\"none\"/>",
                hatch.trim_end()
            );
        }
    }

    /// A band's label at height `label_y`, from its left edge, or ending at
    /// its right one when that is in the right half.
    fn band_label(&self, o: &mut String, b: &Band, label_y: f64) {
        let (x0, x1) = self.band_x(b);
        let right = x1 > (LEFT + PLOT_RIGHT) / 2.0;
        let (at, anchor) = if right { (x1, "end") } else { (x0, "start") };
        let label = format!(
            " font-size=\"10\" text-anchor=\"{anchor}\" fill=\"#8b1a1a\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\""
        );
        text(o, (at, label_y), &label, &truncate(&b.text, 80));
    }

    /// A dot in the line's colour at each of its points.
    fn dots(&self, o: &mut String, line: &Polyline) {
        let color = PALETTE[line.color % PALETTE.len()];
        for (x, y) in line.points.iter().flatten() {
            if x.is_finite() && y.is_finite() {
                let _ = writeln!(
                    o,
                    "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{color}\"/>",
                    n(self.px(*x)),
                    n(self.py(*y))
                );
            }
        }
    }

    /// SVG path data of a polyline, consecutive duplicate points dropped.
    fn path(&self, line: &Polyline) -> String {
        let mut d = String::new();
        let mut pen_down = false;
        let mut last: Option<(String, String)> = None;
        for p in &line.points {
            match p {
                None => {
                    pen_down = false;
                    last = None;
                }
                Some((x, y)) => {
                    if !x.is_finite() || !y.is_finite() {
                        pen_down = false;
                        last = None;
                        continue;
                    }
                    let xy = (n(self.px(*x)), n(self.py(*y)));
                    if last.as_ref() == Some(&xy) {
                        continue;
                    }
                    if !d.is_empty() {
                        d.push(' ');
                    }
                    d.push(if pen_down { 'L' } else { 'M' });
                    let _ = write!(d, "{},{}", xy.0, xy.1);
                    pen_down = true;
                    last = Some(xy);
                }
            }
        }
        d
    }

    /// An inline `<svg>` for HTML5 (no namespace declaration needed there).
    pub fn inline(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\">",
            escape(&self.title),
            w = WIDTH as u32,
            h = HEIGHT as u32
        );
        self.body(&mut o);
        o.push_str("</svg>\n");
        o
    }
}

/// A standalone SVG document with the plots stacked vertically.
pub fn document(plots: &[Plot]) -> String {
    let count = plots.len().max(1);
    let h = HEIGHT as usize * count;
    let mut o = String::new();
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">",
        w = WIDTH as u32
    );
    let title = plots
        .first()
        .map(|p| p.title.clone())
        .unwrap_or_else(|| "rtlat: no plots".into());
    let _ = writeln!(o, "<title>{}</title>", escape(&title));
    if plots.is_empty() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"200.0\" text-anchor=\"middle\" font-size=\"14\">no results</text>",
            n(WIDTH / 2.0)
        );
    }
    for (i, p) in plots.iter().enumerate() {
        let _ = writeln!(o, "<g transform=\"translate(0,{})\">", HEIGHT as usize * i);
        p.body(&mut o);
        o.push_str("</g>\n");
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_up(0.7), 1.0);
        assert_eq!(nice_up(1.0), 1.0);
        assert_eq!(nice_up(1.2), 2.0);
        assert_eq!(nice_up(3.0), 5.0);
        assert_eq!(nice_up(7.0), 10.0);
        assert_eq!(nice_up(420.0), 500.0);
        assert_eq!(nice_up(0.013), 0.02);
        assert_eq!(nice_up(f64::NAN), 1.0);
    }

    #[test]
    fn axes_cover_their_range_with_round_ticks() {
        let a = linear_axis("x", 0.0, 110.0);
        assert_eq!(a.min, 0.0);
        assert!(a.max >= 110.0);
        assert_eq!(a.ticks[1].1, "20");
        let b = linear_axis("x", 5.0, 5.0);
        assert!(b.max > b.min);
        let c = linear_axis("x", 0.0, 0.03);
        assert_eq!(c.ticks[1].1, "0.005");
        let l = log_axis("y", -0.3, 3.2, decade);
        assert_eq!((l.min, l.max), (-1.0, 4.0));
        assert_eq!(l.ticks[0].1, "0.1");
        assert_eq!(l.ticks.last().unwrap().1, "10000");
        assert_eq!(decade(9), "1e9");
    }

    #[test]
    fn escaping_leaves_no_markup_or_url_scheme() {
        assert_eq!(
            escape("a<b & \"c\" http://x"),
            "a&lt;b &amp; &quot;c&quot; http:&#47;&#47;x"
        );
    }

    #[test]
    fn band_labels_lie_over_every_band_on_a_halo_a_line_apart() {
        let band = |x: f64, y: f64, text: &str| Band {
            x: (x, 10.0),
            y: (0.0, y),
            color: 0,
            text: text.into(),
        };
        let p = Plot {
            title: "t".into(),
            subtitle: "s".into(),
            x: linear_axis("x", 0.0, 10.0),
            y: linear_axis("y", 0.0, 10.0),
            lines: Vec::new(),
            keys: Vec::new(),
            markers: Vec::new(),
            bands: vec![band(4.0, 9.0, "first"), band(5.0, 9.5, "second")],
            empty: None,
        };
        let svg = p.inline();
        let last_band = svg.rfind("fill=\"#fbe3d6\"").unwrap();
        let labels: Vec<usize> = ["first", "second"]
            .iter()
            .map(|t| svg.find(&format!(">{t}</text>")).unwrap())
            .collect();
        assert!(labels.iter().all(|at| *at > last_band), "{svg}");
        let y_of = |at: usize| {
            let line = &svg[svg[..at].rfind('\n').unwrap()..at];
            let y = line.split("y=\"").nth(1).unwrap();
            y[..y.find('"').unwrap()].parse::<f64>().unwrap()
        };
        assert!(y_of(labels[1]) - y_of(labels[0]) >= 13.0, "{svg}");
        assert_eq!(svg.matches("paint-order=\"stroke\"").count(), 2, "{svg}");
    }

    #[test]
    fn paths_skip_duplicates_and_break_on_none() {
        let p = Plot {
            title: "t".into(),
            subtitle: "s".into(),
            x: linear_axis("x", 0.0, 10.0),
            y: linear_axis("y", 0.0, 10.0),
            lines: Vec::new(),
            keys: Vec::new(),
            markers: Vec::new(),
            bands: Vec::new(),
            empty: None,
        };
        let line = Polyline {
            color: 0,
            dash: Dash::Solid,
            width: 1.0,
            points: vec![
                Some((0.0, 0.0)),
                Some((0.0, 0.0)),
                Some((10.0, 10.0)),
                None,
                Some((5.0, f64::NAN)),
                Some((5.0, 5.0)),
            ],
            dots: false,
        };
        assert_eq!(p.path(&line), "M80.0,348.0 L760.0,78.0 M420.0,213.0");
    }
}
