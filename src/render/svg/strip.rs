//! The strip of one explained worst case (`--explain`): a bar as long as
//! its latency, one coloured stretch per part, largest first, each with its
//! name and time as a tooltip.

use super::writer::escape;
use crate::result::explained::short;
use crate::result::Explained;
use std::fmt::Write as _;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 18.0;

/// The colour of a part's kind (the same kind, the same colour everywhere).
fn colour(kind: &str) -> &'static str {
    match kind {
        "hypervisor" => "#7f7f7f",
        "thread" => "#d62728",
        "preempt-off" => "#ff7f0e",
        "irqs-off" => "#bcbd22",
        "irq" => "#1f77b4",
        "vector" => "#17becf",
        "softirq" => "#9467bd",
        "nmi" => "#8c564b",
        "idle" | "throttled" => "#2ca02c",
        "self" => "#c7c7c7",
        _ => "#e377c2",
    }
}

/// An SVG of `e`'s parts, inline in HTML (no namespace: the page names
/// no URL).
pub fn strip(e: &Explained) -> String {
    let mut s = format!(
        "<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\"><title>{}</title>",
        escape(&format!("{} on {}", short(e.latency_ns), e.thread))
    );
    let total = e.latency_ns.max(1) as f64;
    let mut x = 0.0;
    for p in &e.parts {
        let w = WIDTH * p.ns as f64 / total;
        let _ = write!(
            s,
            "<rect x=\"{x:.2}\" y=\"0\" width=\"{w:.2}\" height=\"{HEIGHT}\" fill=\"{}\"><title>{}</title></rect>",
            colour(&p.kind),
            escape(&format!("{} {}", p.label(), short(p.ns)))
        );
        x += w;
    }
    s.push_str("</svg>");
    s
}

/// The legend of the strips of `explained`: a swatch and the name of each
/// kind of part they show, in the order first met.
pub fn legend(explained: &[Explained]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for p in explained.iter().flat_map(|e| &e.parts) {
        if !kinds.contains(&p.kind.as_str()) {
            kinds.push(&p.kind);
        }
    }
    let mut s = String::from("<p class=\"legend\">");
    for k in kinds {
        let _ = write!(
            s,
            "<span><i style=\"background:{}\"></i>{}</span> ",
            colour(k),
            escape(k)
        );
    }
    s.push_str("</p>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Part;

    #[test]
    fn the_parts_fill_the_strip_in_proportion() {
        let part = |kind: &str, name: &str, ns| Part {
            kind: kind.into(),
            name: name.into(),
            ns,
            stack: Vec::new(),
        };
        let e = Explained {
            thread: "cpu1".into(),
            cpu: Some(1),
            at_ns: 0,
            latency_ns: 4000,
            parts: vec![part("thread", "hog <1>", 3000), part("irq", "eth0", 1000)],
        };
        let svg = strip(&e);
        assert!(svg.contains("width=\"480.00\""), "{svg}");
        assert!(
            svg.contains("x=\"480.00\" y=\"0\" width=\"160.00\""),
            "{svg}"
        );
        assert!(svg.contains("thread hog &lt;1&gt; 3.0 us"), "{svg}");
    }

    #[test]
    fn the_legend_names_each_kind_once_in_its_colour() {
        let part = |kind: &str, ns| Part {
            kind: kind.into(),
            name: "x".into(),
            ns,
            stack: Vec::new(),
        };
        let e = |parts| Explained {
            thread: "cpu1".into(),
            cpu: Some(1),
            at_ns: 0,
            latency_ns: 4000,
            parts,
        };
        let l = legend(&[
            e(vec![part("thread", 3000), part("irq", 1000)]),
            e(vec![part("irq", 3000), part("softirq", 1000)]),
        ]);
        assert_eq!(
            l,
            "<p class=\"legend\"><span><i style=\"background:#d62728\"></i>thread</span> \
             <span><i style=\"background:#1f77b4\"></i>irq</span> \
             <span><i style=\"background:#9467bd\"></i>softirq</span> </p>"
        );
    }
}
