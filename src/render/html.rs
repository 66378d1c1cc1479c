//! One self-contained HTML report: the summaries and every plot of each
//! result (inline SVG), then its run, system (once per machine), config and
//! loads, and its data embedded as JSON. No script, stylesheet, font or image is fetched: the page has no
//! `http://` or `https://` reference at all.

use super::describe::{
    detail_value, duration_of, extremes_of, load_name, loads_of, machine_of, percentile_of,
    policy_of, primary, us_or_unknown, UNKNOWN,
};
use super::svg::{escape, has_series, report_plots};
use super::text::{exceeded, max_at, shown_percentiles};
use super::{Loaded, Render};
use crate::load::human_rate;
use crate::result::{EndReason, RunResult};
use crate::stats::summary::label as percentile_label;
use crate::stats::Summary;
use crate::units::{secs, us};
use std::fmt::Write;

pub const STYLE: &str = "\
body{font-family:sans-serif;color:#222;margin:24px auto;max-width:1000px;padding:0 12px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:36px}
h3{font-size:15px;margin-top:20px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f0f0f0}td.k,th.k{text-align:left}
table.kv td{text-align:left}table.kv td:first-child{font-weight:bold;white-space:nowrap}
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}
svg{display:block;margin:12px 0;max-width:100%;height:auto;border:1px solid #eee}
.note{color:#a33}
.legend span{margin-right:12px;font-size:13px;white-space:nowrap}
.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:middle}";

/// One self-contained HTML page of results.
pub struct HtmlReport;

impl Render for HtmlReport {
    fn render(&self, results: &[&Loaded]) -> String {
        report(results)
    }
}

/// A result on a page, under its name (a suite step's, else its label).
pub struct Entry<'a> {
    pub name: String,
    pub loaded: &'a Loaded,
}

/// The page of results named by their labels.
pub fn report(results: &[&Loaded]) -> String {
    let title = match results {
        [one] => format!("rtlat report: {} ({})", one.label, one.result.benchmark),
        many => format!("rtlat report: {} results", many.len()),
    };
    let entries: Vec<Entry> = results
        .iter()
        .map(|l| Entry {
            name: l.label.clone(),
            loaded: l,
        })
        .collect();
    page(&title, ["", ""], &entries)
}

/// The whole page: `top[0]`, for several results a summary table linking
/// to each, `top[1]` (a suite's by-board table and steps); then each
/// result, its figures and plots before the details of the run and the
/// system (the system once per machine).
pub fn page(title: &str, top: [&str; 2], entries: &[Entry]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "<!DOCTYPE html>");
    let _ = writeln!(o, "<html lang=\"en\">");
    let _ = writeln!(o, "<head>");
    let _ = writeln!(o, "<meta charset=\"utf-8\">");
    let _ = writeln!(
        o,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    );
    let _ = writeln!(o, "<title>{}</title>", escape(title));
    let _ = writeln!(o, "<style>\n{STYLE}\n</style>");
    let _ = writeln!(o, "</head>");
    let _ = writeln!(o, "<body>");
    let _ = writeln!(o, "<h1>{}</h1>", escape(title));
    let _ = writeln!(
        o,
        "<p>Made by rtlat {} from {} result file(s). Latencies in µs. Each result's data is embedded below as JSON (<code>script type=\"application/json\"</code>).</p>",
        env!("CARGO_PKG_VERSION"),
        entries.len()
    );
    o.push_str(top[0]);
    if entries.len() > 1 {
        summary_of_all(&mut o, entries);
    }
    o.push_str(top[1]);
    let mut machines: Vec<(String, usize)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let machine = machine_key(&e.loaded.result);
        let shown = machines
            .iter()
            .find(|(m, _)| *m == machine)
            .map(|(_, at)| *at);
        if shown.is_none() {
            machines.push((machine, i));
        }
        section(
            &mut o,
            i,
            e,
            shown.map(|at| (at, entries[at].name.as_str())),
        );
    }
    let _ = writeln!(o, "</body>");
    let _ = writeln!(o, "</html>");
    o
}

/// What names a machine for the system table: host, architecture, board
/// model and kernel.
fn machine_key(r: &RunResult) -> String {
    let s = &r.system;
    format!(
        "{:?} {:?} {:?} {:?} {:?}",
        s.hostname,
        s.machine,
        s.board_model(),
        s.kernel_release,
        s.kernel_version
    )
}

/// A table of cells, the header first; `left` columns set left.
pub fn table(o: &mut String, left: usize, rows: &[Vec<String>]) {
    let _ = writeln!(o, "<table>");
    for (i, row) in rows.iter().enumerate() {
        let cell = if i == 0 { "th" } else { "td" };
        o.push_str("<tr>");
        for (c, v) in row.iter().enumerate() {
            let class = if c < left { " class=\"k\"" } else { "" };
            let _ = write!(o, "<{cell}{class}>{}</{cell}>", escape(v));
        }
        o.push_str("</tr>\n");
    }
    let _ = writeln!(o, "</table>");
}

/// One row per result, each its main figure, its name a link to it.
fn summary_of_all(o: &mut String, entries: &[Entry]) {
    let _ = writeln!(o, "<h2>Summary</h2>\n<table>");
    let _ = writeln!(
        o,
        "<tr><th class=\"k\">result</th><th class=\"k\">benchmark</th><th class=\"k\">load</th><th>samples</th><th>min</th><th>avg</th><th>max</th><th>p99</th><th>overruns</th></tr>"
    );
    for (i, e) in entries.iter().enumerate() {
        let r = &e.loaded.result;
        let (_, _, s) = primary(r);
        let [min, avg, max] = extremes_of(&s);
        let _ = writeln!(
            o,
            "<tr><td class=\"k\"><a href=\"#result-{i}\">{}</a></td><td class=\"k\">{}</td><td class=\"k\">{}</td><td>{}</td><td>{min}</td><td>{avg}</td><td>{max}</td><td>{}</td><td>{}</td></tr>",
            escape(&e.name),
            r.benchmark,
            escape(&loads_of(r, false)),
            s.samples,
            escape(&percentile_of(&s, 99.0)),
            s.overruns
        );
    }
    let _ = writeln!(o, "</table>");
}

fn kv(o: &mut String, rows: &[(&str, String)]) {
    let _ = writeln!(o, "<table class=\"kv\">");
    for (k, v) in rows {
        if v.is_empty() {
            continue;
        }
        let _ = writeln!(o, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(v));
    }
    let _ = writeln!(o, "</table>");
}

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// A result: its figures and plots first, then the run, the system (or
/// where it is shown: `system_at`), the tuning and the loads.
fn section(o: &mut String, i: usize, e: &Entry, system_at: Option<(usize, &str)>) {
    let l = e.loaded;
    let r = &l.result;
    heading(o, i, e);
    summaries(o, r);
    explained_list(o, r);
    notes_list(o, r);
    plots(o, l);
    run_table(o, l);
    match system_at {
        Some((at, name)) => {
            let _ = writeln!(
                o,
                "<h3>System</h3>\n<p>The machine of <a href=\"#result-{at}\">{}</a>.</p>",
                escape(name)
            );
        }
        None => system_table(o, r),
    }
    tuning_table(o, r);
    loads_table(o, r);
    result_data(o, i, l);
    let _ = writeln!(o, "</section>");
}

/// The section's opening: its anchor, name, the label when the name is
/// another, machine and load, and whether the run finished.
fn heading(o: &mut String, i: usize, e: &Entry) {
    let (l, r) = (e.loaded, &e.loaded.result);
    let _ = writeln!(o, "<section id=\"result-{i}\">");
    let _ = writeln!(
        o,
        "<h2>{} — {}</h2>",
        escape(&e.name),
        escape(r.benchmark.title())
    );
    let label = if e.name == l.label {
        String::new()
    } else {
        format!("{} · ", l.label)
    };
    let _ = writeln!(
        o,
        "<p>{}{} · load: {}</p>",
        escape(&label),
        escape(&machine_of(r)),
        escape(&loads_of(r, true))
    );
    if !r.complete {
        let _ = writeln!(
            o,
            "<p class=\"note\">This result is incomplete (end reason: {}): the run did not finish.</p>",
            r.end_reason
        );
    }
}

/// Run: the file, the tool, the command line and when and how long it ran.
fn run_table(o: &mut String, l: &Loaded) {
    let r = &l.result;
    let _ = writeln!(o, "<h3>Run</h3>");
    kv(
        o,
        &[
            ("file", l.path.display().to_string()),
            ("benchmark", r.benchmark.to_string()),
            ("tool", format!("{} {}", r.tool.name, r.tool.version)),
            ("command line", r.command_line.join(" ")),
            ("start (UTC)", r.start_time_utc.clone()),
            ("duration", duration_of(r).unwrap_or_else(|| UNKNOWN.into())),
            (
                "how it ended",
                format!(
                    "{}{}",
                    r.end_reason.phrase(),
                    if r.complete || r.end_reason == EndReason::Running {
                        ""
                    } else {
                        " (incomplete)"
                    }
                ),
            ),
        ],
    );
}

/// System: the machine, its kernel and what tunes its latency.
fn system_table(o: &mut String, r: &RunResult) {
    let s = &r.system;
    let _ = writeln!(o, "<h3>System</h3>");
    let governors: Vec<String> = s
        .governors
        .iter()
        .map(|g| format!("cpu{}: {}", g.cpu, g.governor))
        .collect();
    let idle: Vec<String> = s
        .idle_states
        .iter()
        .map(|st| {
            format!(
                "{} ({} us){}",
                st.name,
                st.latency_us,
                if st.disabled { " disabled" } else { "" }
            )
        })
        .collect();
    kv(
        o,
        &[
            ("hostname", opt(&s.hostname)),
            ("kernel release", opt(&s.kernel_release)),
            ("kernel version", opt(&s.kernel_version)),
            ("preempt model", s.preempt_model.clone()),
            ("machine", opt(&s.machine)),
            ("CPU model", opt(&s.cpu_model)),
            ("hardware", opt(&s.hardware)),
            ("device tree model", opt(&s.device_tree_model)),
            ("DMI product", opt(&s.dmi_product)),
            (
                "CPUs",
                if s.cpu_count > 0 {
                    format!(
                        "{} online{}",
                        s.cpu_count,
                        s.online_cpus
                            .as_deref()
                            .map(|c| format!(" ({c})"))
                            .unwrap_or_default()
                    )
                } else {
                    String::new()
                },
            ),
            ("kernel command line", opt(&s.cmdline)),
            ("isolcpus", opt(&s.isolcpus)),
            ("nohz_full", opt(&s.nohz_full)),
            ("rcu_nocbs", opt(&s.rcu_nocbs)),
            ("clocksource", opt(&s.clocksource)),
            ("governors", governors.join(", ")),
            (
                "SMT active",
                s.smt_active.map(|b| b.to_string()).unwrap_or_default(),
            ),
            ("idle states", idle.join(", ")),
            (
                "RT throttling",
                match (s.sched_rt_runtime_us, s.sched_rt_period_us) {
                    (Some(rt), Some(p)) => format!("{rt} us every {p} us"),
                    _ => String::new(),
                },
            ),
            ("virtualization", opt(&s.virtualization)),
            (
                "timer migration",
                s.timer_migration.map(|b| b.to_string()).unwrap_or_default(),
            ),
        ],
    );
}

/// Tuning and configuration: the run's scheduling and its config object.
fn tuning_table(o: &mut String, r: &RunResult) {
    let t = &r.tuning;
    let _ = writeln!(o, "<h3>Tuning and configuration</h3>");
    kv(
        o,
        &[
            ("policy", policy_of(r).unwrap_or_else(|| UNKNOWN.into())),
            (
                "mlock",
                t.mlock
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| UNKNOWN.into()),
            ),
            (
                "cpu_dma_latency",
                match t.dma_latency_us {
                    Some(Some(v)) => format!("{v} us"),
                    Some(None) => "off".into(),
                    None => UNKNOWN.into(),
                },
            ),
            (
                "affinity",
                t.affinity
                    .iter()
                    .map(|a| a.map(|c| c.to_string()).unwrap_or_else(|| "-".into()))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ],
    );
    let config = serde_json::to_string_pretty(&r.config).unwrap_or_default();
    let _ = writeln!(o, "<pre>{}</pre>", escape(&config));
}

/// Load: a row per declared load, or that there was none.
fn loads_table(o: &mut String, r: &RunResult) {
    let _ = writeln!(o, "<h3>Load</h3>");
    if r.loads.is_empty() {
        let _ = writeln!(o, "<p>No load was declared (idle).</p>");
    } else {
        let _ = writeln!(
            o,
            "<table>\n<tr><th class=\"k\">load</th><th>workers</th><th>achieved rate</th><th>CPU time</th><th>failed</th><th class=\"k\">parameters</th></tr>"
        );
        for load in &r.loads {
            let num = |k: &str| load.get(k).and_then(|v| v.as_u64());
            let rate = load
                .get("achieved_rate")
                .and_then(|v| v.as_f64())
                .map(|v| {
                    human_rate(
                        v,
                        load.get("rate_unit").and_then(|u| u.as_str()).unwrap_or(""),
                    )
                })
                .unwrap_or_else(|| "-".into());
            let failed = load
                .get("failed")
                .and_then(|v| v.as_array())
                .map(|a| a.len().to_string())
                .unwrap_or_else(|| "-".into());
            let params = load
                .get("params")
                .map(|p| p.to_string())
                .unwrap_or_else(|| load.to_string());
            let _ = writeln!(
                o,
                "<tr><td class=\"k\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{failed}</td><td class=\"k\"><code>{}</code></td></tr>",
                escape(&load_name(load)),
                num("workers").map(|w| w.to_string()).unwrap_or_else(|| "-".into()),
                escape(&rate),
                num("cpu_time_ns").map(secs).unwrap_or_else(|| "-".into()),
                escape(&params)
            );
        }
        let _ = writeln!(o, "</table>");
    }
}

/// Summary: a row per thread (and all), then the phases, the details and the threshold.
fn summaries(o: &mut String, r: &RunResult) {
    let _ = writeln!(o, "<h3>Summary</h3>");
    let mut rows: Vec<(&str, &Summary)> = r
        .threads
        .iter()
        .map(|t| (t.name.as_str(), &t.summary))
        .collect();
    if r.threads.len() > 1 {
        rows.push(("all", &r.total));
    }
    summary_table(o, "thread", &rows);
    if !r.phases.is_empty() {
        let _ = writeln!(o, "<h3>Phases</h3>");
        let prows: Vec<(String, &Summary)> = r
            .phases
            .iter()
            .map(|p| {
                (
                    format!("{} ({}-{})", p.name, secs(p.start_ns), secs(p.end_ns)),
                    &p.total,
                )
            })
            .collect();
        let prefs: Vec<(&str, &Summary)> = prows.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        summary_table(o, "phase", &prefs);
    }
    if let Some(line) = super::describe::details_line(r) {
        let _ = writeln!(o, "<h3>Details</h3>\n<p>{}</p>", escape(&line));
    } else if !r.details.is_empty() {
        let _ = writeln!(o, "<h3>Details</h3>");
        let rows: Vec<(&str, String)> = r
            .details
            .iter()
            .map(|(k, v)| (k.as_str(), detail_value(v)))
            .collect();
        kv(o, &rows);
    }
    if let Some(limit) = r.thresholds.max_latency_ns {
        let _ = writeln!(o, "<p>max-latency {} us: {}</p>", us(limit), exceeded(r));
    }
}

/// The worst cases explained (`--explain`): each one's line and its strip.
fn explained_list(o: &mut String, r: &RunResult) {
    if r.explained.is_empty() {
        return;
    }
    let _ = writeln!(o, "<h3>Worst cases explained</h3>");
    let _ = writeln!(o, "{}\n<ul>", super::svg::strip::legend(&r.explained));
    for e in &r.explained {
        let _ = write!(
            o,
            "<li>{}<br>{}",
            escape(&super::text::explained_line(e)),
            super::svg::strip::strip(e)
        );
        for p in e.parts.iter().filter(|p| !p.stack.is_empty()) {
            let _ = write!(
                o,
                "<details><summary>kernel stack of {}</summary><pre>{}</pre></details>",
                escape(&p.label()),
                escape(&p.stack.join("\n"))
            );
        }
        let _ = writeln!(o, "</li>");
    }
    let _ = writeln!(o, "</ul>");
}

/// Notes: the result's notes as a list.
fn notes_list(o: &mut String, r: &RunResult) {
    if !r.notes.is_empty() {
        let _ = writeln!(o, "<h3>Notes</h3>\n<ul>");
        for n in &r.notes {
            let _ = writeln!(o, "<li>{}</li>", escape(n));
        }
        let _ = writeln!(o, "</ul>");
    }
}

/// Plots: the result's plots inline, or why there is no plot over time.
fn plots(o: &mut String, l: &Loaded) {
    let r = &l.result;
    let _ = writeln!(o, "<h3>Plots</h3>");
    if !has_series(r) {
        let _ = writeln!(
            o,
            "<p>No plot over time: this result has no per-interval series (its source records none).</p>"
        );
    }
    for p in report_plots(l) {
        o.push_str(&p.inline());
    }
}

/// Result data: the result file embedded in the page.
fn result_data(o: &mut String, i: usize, l: &Loaded) {
    let _ = writeln!(o, "<h3>Result data</h3>");
    let _ = writeln!(
        o,
        "<p>The result file as read, in <code>script#data-{i}</code> of this page's source.</p>"
    );
    let _ = writeln!(
        o,
        "<script type=\"application/json\" id=\"data-{i}\">{}</script>",
        embedded_json(&l.result)
    );
}

/// JSON safe inside `<script>`: every `<` and `/` escaped (`\u003c`, `\/`),
/// which also keeps URL schemes out of the page; JSON parsers read it back unchanged.
pub fn embedded_json(r: &crate::result::RunResult) -> String {
    let text = serde_json::to_string(r).unwrap_or_else(|_| "null".into());
    text.replace('<', "\\u003c").replace('/', "\\/")
}

fn summary_table(o: &mut String, first: &str, rows: &[(&str, &Summary)]) {
    let n_max = rows.iter().map(|(_, s)| s.samples).max().unwrap_or(0);
    let ps = shown_percentiles(n_max);
    let _ = write!(
        o,
        "<table>\n<tr><th class=\"k\">{}</th><th>samples</th><th>min</th><th>avg</th><th>max</th><th>stddev</th>",
        escape(first)
    );
    for &p in &ps {
        let _ = write!(o, "<th>{}</th>", percentile_label(p));
    }
    let _ = writeln!(o, "<th>overruns</th><th>max at</th></tr>");
    for (name, s) in rows {
        let [min, avg, max] = extremes_of(s);
        let _ = write!(
            o,
            "<tr><td class=\"k\">{}</td><td>{}</td><td>{min}</td><td>{avg}</td><td>{max}</td><td>{}</td>",
            escape(name),
            s.samples,
            us_or_unknown(s.stddev_ns)
        );
        for &p in &ps {
            let _ = write!(o, "<td>{}</td>", escape(&percentile_of(s, p)));
        }
        let _ = writeln!(
            o,
            "<td>{}</td><td>{}</td></tr>",
            s.overruns,
            escape(&max_at(s))
        );
    }
    let _ = writeln!(o, "</table>");
}
