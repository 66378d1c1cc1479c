//! What a suite runs: its steps, from a built-in profile or a TOML file.
//!
//! A step is one normal rtlat run (`rtlat <bench> [args] --duration D
//! [--load L] [--idle-first I] --json FILE`), so it can be repeated by hand
//! from the command line the manifest records.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One step of a suite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Names the result file (`<name>.json`); letters, digits, `-`, `_`, `.`;
    /// at most 256 characters.
    pub name: String,
    /// The subcommand, e.g. `timer`, `switch`, `cruncher` or `net ping`.
    pub bench: String,
    /// How long the step measures (after its idle phase, if any).
    pub duration: String,
    /// Loads beside the measurement (`--load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    /// Measure idle this long first, then under the load (`--idle-first`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_first: Option<String>,
    /// Further options of the benchmark, passed as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `--explain`: `true` (the 10 worst samples of each thread) or how
    /// many (`--explain-worst N`); only for the benchmarks that have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<StepExplain>,
    /// A step this machine may not be able to run: when it exits 3 (a kernel
    /// feature, device or privilege it needs is missing), it is recorded as
    /// skipped with its reason and the suite goes on, successfully.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// A step's `explain`: on or off, or how many worst samples per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StepExplain {
    On(bool),
    Worst(u64),
}

/// Benchmarks with `--explain`.
const EXPLAINED: &[&str] = &["timer", "switch", "cruncher", "net ping", "irq loopback"];

impl Step {
    /// The arguments after the executable, writing the result to `json`.
    pub fn argv(&self, json: &str) -> Vec<String> {
        let mut v: Vec<String> = self.bench.split_whitespace().map(String::from).collect();
        v.extend(self.args.iter().cloned());
        match self.explain {
            Some(StepExplain::On(true)) => v.push("--explain".into()),
            Some(StepExplain::Worst(n)) => {
                v.extend(["--explain".into(), "--explain-worst".into(), n.to_string()]);
            }
            Some(StepExplain::On(false)) | None => {}
        }
        v.extend(["--duration".into(), self.duration.clone()]);
        if let Some(l) = &self.load {
            v.extend(["--load".into(), l.clone()]);
        }
        if let Some(i) = &self.idle_first {
            v.extend(["--idle-first".into(), i.clone()]);
        }
        v.extend(["--json".into(), json.into(), "--quiet".into()]);
        v
    }

    /// The result file's name inside the suite directory.
    pub fn file(&self) -> String {
        format!("{}.json", self.name)
    }

    /// Measuring time in ns (idle phase included), for the progress line.
    pub fn length_ns(&self) -> u64 {
        let d = |s: &Option<String>| {
            s.as_deref()
                .and_then(|t| crate::units::parse_duration_ns(t).ok())
                .unwrap_or(0)
        };
        d(&Some(self.duration.clone())).saturating_add(d(&self.idle_first))
    }
}

/// A suite: a name and its steps, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    #[serde(default)]
    pub name: String,
    #[serde(rename = "step", default)]
    pub steps: Vec<Step>,
}

/// The built-in profiles: name and what it is for.
pub const PROFILES: &[(&str, &str)] = &[
    (
        "quick",
        "cruncher, switch, timer idle and timer under load, 5 s each: a first look",
    ),
    (
        "classic",
        "cruncher idle, switch idle, timer under load, 10 min each, and the timer in the kernel's IRQ and thread contexts under the same load where the kernel has timerlat: the published battery",
    ),
    (
        "soak",
        "timer under the full load mix for 6 h, after 10 min idle",
    ),
];

/// The load of `classic`'s timer step.
const CLASSIC_LOAD: &str = "hackbench:4,exec:2,memory:32M,io";
/// Everything at once: processes, messages, memory, disk, timers, network.
const FULL_MIX: &str = "hackbench:4,exec:2,memory:32M,io,timers,net:4MB/s";

fn step(name: &str, bench: &str, duration: &str, load: Option<&str>) -> Step {
    Step {
        name: name.into(),
        bench: bench.into(),
        duration: duration.into(),
        load: load.map(String::from),
        idle_first: None,
        args: Vec::new(),
        explain: None,
        optional: false,
    }
}

/// A built-in profile by name.
pub fn builtin(name: &str) -> Option<Plan> {
    let steps = match name {
        "quick" => vec![
            step("cruncher", "cruncher", "5s", None),
            step("switch", "switch", "5s", None),
            step("timer", "timer", "5s", None),
            step("timer-load", "timer", "5s", Some("exec:1,memory:16M")),
        ],
        "classic" => vec![
            step("cruncher", "cruncher", "10m", None),
            step("switch", "switch", "10m", None),
            step("timer-load", "timer", "10m", Some(CLASSIC_LOAD)),
            // KLATENCY beside LATENCY: skipped (exit 3) on a kernel without
            // the timerlat tracer or a build without the trace reader.
            Step {
                args: vec!["--context".into(), "irq,thread".into()],
                optional: true,
                ..step("timer-kernel", "timer", "10m", Some(CLASSIC_LOAD))
            },
        ],
        "soak" => vec![Step {
            idle_first: Some("10m".into()),
            ..step("timer-soak", "timer", "6h", Some(FULL_MIX))
        }],
        _ => return None,
    };
    Some(Plan {
        name: name.into(),
        steps,
    })
}

fn profile_names() -> String {
    PROFILES.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
}

/// A profile name, or a `.toml` file defining a suite.
pub fn resolve(what: &str) -> Result<Plan> {
    if let Some(plan) = builtin(what) {
        return Ok(plan);
    }
    let path = Path::new(what);
    if !what.ends_with(".toml") && !path.is_file() {
        return Err(Error::usage(format!(
            "unknown suite profile '{what}'; use one of {} or a FILE.toml",
            profile_names()
        )));
    }
    from_file(path, what)
}

/// A profile name, or a `.toml` file whose name need not be UTF-8 (a file
/// name is bytes; only a profile name is text).
pub fn resolve_os(what: &std::ffi::OsStr) -> Result<Plan> {
    match what.to_str() {
        Some(s) => resolve(s),
        None => {
            let path = Path::new(what);
            from_file(path, &path.display().to_string())
        }
    }
}

/// The suite a TOML file defines (`what` names it in errors).
fn from_file(path: &Path, what: &str) -> Result<Plan> {
    let text = crate::input::read_text(path)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "suite".into());
    parse(&text, what, &stem)
}

/// 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// A suite from TOML text (`origin` names it in errors, `stem` is the default name).
pub fn parse(text: &str, origin: &str, stem: &str) -> Result<Plan> {
    let mut plan: Plan = toml::from_str(text).map_err(|e| {
        let place = e.span().map(|s| line_col(text, s.start));
        let msg = crate::render::one_line(e.message());
        match place {
            Some((l, c)) => Error::usage(format!("{origin}:{l}:{c}: {msg}")),
            None => Error::usage(format!("{origin}: {msg}")),
        }
        .because(e)
    })?;
    if plan.name.is_empty() {
        plan.name = stem.into();
    }
    validate(&plan).map_err(|m| Error::usage(format!("{origin}: {m}")))?;
    Ok(plan)
}

/// Benchmarks a step may run.
const BENCHES: &[&str] = &[
    "timer",
    "switch",
    "cruncher",
    "noise",
    "net ping",
    "irq loopback",
    "irq host",
];

/// Step names a suite directory keeps for its own files: `suite.json` is
/// the manifest; `report` and `summary` name its report files.
pub const RESERVED: [&str; 3] = ["suite", "report", "summary"];

/// The longest step name: its file, `<name>.json`, is at most 255 bytes.
pub const MAX_STEP_NAME: usize = 250;

/// A step name usable as its result file's name (`<name>.json`) in the
/// suite directory, whoever gave it (a suite file or a manifest read back):
/// bounded, of letters, digits, `-`, `_` and `.`, not hidden, not reserved.
pub fn check_step_name(name: &str) -> std::result::Result<(), String> {
    // The name becomes a file name (`<name>.json`, 255 bytes at most on
    // Linux) and a column heading in every table.
    crate::input::check_name("step name", name)?;
    let ok_name = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !ok_name {
        return Err(format!(
            "step name '{name}' is not usable as a file name; use letters, digits, '-', '_' and '.'"
        ));
    }
    // 255 bytes of a file name on Linux, less `.json`.
    if name.len() > MAX_STEP_NAME {
        return Err(format!(
            "step name '{}…' is {} characters long; it names its result file ({}.json) and holds at most {MAX_STEP_NAME}",
            &name[..20],
            name.len(),
            &name[..20],
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!(
            "step name '{name}' is reserved for the suite's own files ({}); choose another",
            RESERVED.join(", ")
        ));
    }
    Ok(())
}

/// A step's `explain` fits its benchmark and counts 1 to 1000 samples.
fn check_explain(s: &Step, bench: &str) -> std::result::Result<(), String> {
    let Some(e) = s.explain else {
        return Ok(());
    };
    if e != StepExplain::On(false) && !EXPLAINED.contains(&bench) {
        return Err(format!(
            "step '{}': explain is for {} only, not '{bench}'; remove it",
            s.name,
            EXPLAINED.join(", ")
        ));
    }
    if let StepExplain::Worst(n) = e {
        if !(1..=1000).contains(&n) {
            return Err(format!(
                "step '{}': explain = {n}: give true or how many worst samples per thread, 1 to 1000",
                s.name
            ));
        }
    }
    Ok(())
}

fn validate(plan: &Plan) -> std::result::Result<(), String> {
    if plan.steps.is_empty() {
        return Err("no steps; add [[step]] tables with name, bench and duration".into());
    }
    crate::input::check_name("suite name", &plan.name)?;
    for (i, s) in plan.steps.iter().enumerate() {
        check_step_name(&s.name)?;
        if plan.steps[..i].iter().any(|o| o.name == s.name) {
            return Err(format!(
                "two steps are named '{}'; names must differ",
                s.name
            ));
        }
        let bench = s.bench.split_whitespace().collect::<Vec<_>>().join(" ");
        if !BENCHES.contains(&bench.as_str()) {
            return Err(format!(
                "step '{}': unknown bench '{}'; use one of {}",
                s.name,
                s.bench,
                BENCHES.join(", ")
            ));
        }
        check_explain(s, &bench)?;
        for (what, v) in [
            ("duration", Some(&s.duration)),
            ("idle_first", s.idle_first.as_ref()),
        ] {
            if let Some(v) = v {
                crate::units::parse_duration_ns(v)
                    .map_err(|e| format!("step '{}': {what} '{v}': {e}", s.name))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_valid_and_listed() {
        for (name, _) in PROFILES {
            let p = builtin(name).expect("listed profiles exist");
            validate(&p).expect("valid");
        }
        assert!(builtin("nope").is_none());
        let e = resolve("nope").unwrap_err();
        assert!(e.message().contains("quick, classic, soak"), "{e}");
    }

    #[test]
    fn classic_measures_the_kernel_contexts_in_an_optional_step() {
        let p = builtin("classic").unwrap();
        let names: Vec<&str> = p.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cruncher", "switch", "timer-load", "timer-kernel"]);
        let k = &p.steps[3];
        assert!(k.optional && !p.steps[..3].iter().any(|s| s.optional));
        let argv = k.argv("k.json");
        assert_eq!(argv[..3], ["timer", "--context", "irq,thread"]);
        assert_eq!(k.load, p.steps[2].load, "the same load as LATENCY");
    }

    #[test]
    fn toml_suites_parse_and_errors_name_line_and_column() {
        let text = "name = \"lab\"\n[[step]]\nname = \"t\"\nbench = \"timer\"\nduration = \"2s\"\nload = \"cpu:1\"\nargs = [\"--period\", \"200us\"]\n";
        let p = parse(text, "lab.toml", "x").unwrap();
        assert_eq!(p.name, "lab");
        assert_eq!(
            p.steps[0].argv("t.json"),
            [
                "timer",
                "--period",
                "200us",
                "--duration",
                "2s",
                "--load",
                "cpu:1",
                "--json",
                "t.json",
                "--quiet"
            ]
        );
        let e = parse("[[step]]\nname = \"t\"\nbench = = 3\n", "bad.toml", "bad").unwrap_err();
        assert!(e.message().starts_with("bad.toml:3:"), "{e}");
        let e = parse(
            "[[step]]\nname = \"t\"\nbench = \"timer\"\nduration = \"2s\"\ncolour = 1\n",
            "u.toml",
            "u",
        )
        .unwrap_err();
        assert!(e.message().contains("colour"), "{e}");
        let e = parse(
            "[[step]]\nname = \"a/b\"\nbench = \"timer\"\nduration = \"2s\"\n",
            "n.toml",
            "n",
        )
        .unwrap_err();
        assert!(e.message().contains("file name"), "{e}");
        let e = parse(
            "[[step]]\nname = \"a\"\nbench = \"timer\"\nduration = \"soon\"\n",
            "d.toml",
            "d",
        )
        .unwrap_err();
        assert!(e.message().contains("soon"), "{e}");
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn a_step_asks_for_explain_on_or_for_how_many_worst_samples() {
        let step = |bench: &str, explain: &str| {
            format!("[[step]]\nname = \"s\"\nbench = \"{bench}\"\nduration = \"2s\"\nexplain = {explain}\n")
        };
        let argv = |text: &str| parse(text, "e.toml", "e").unwrap().steps[0].argv("s.json");
        let on = argv(&step("switch", "true"));
        assert_eq!(on[..2], ["switch", "--explain"]);
        assert!(!on.contains(&"--explain-worst".to_string()));
        let n = argv(&step("net ping", "3"));
        assert_eq!(n[..5], ["net", "ping", "--explain", "--explain-worst", "3"]);
        assert!(!argv(&step("timer", "false")).contains(&"--explain".to_string()));
        assert!(!argv(&step("noise", "false")).contains(&"--explain".to_string()));
        // Recorded in the manifest (suite.json) as written, and read back.
        let p = parse(&step("cruncher", "5"), "e.toml", "e").unwrap();
        let back: Plan = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back.steps[0].explain, Some(StepExplain::Worst(5)));
        for (bench, explain, says) in [
            (
                "noise",
                "true",
                "explain is for timer, switch, cruncher, net ping, irq loopback only",
            ),
            ("irq host", "true", "not 'irq host'"),
            ("timer", "0", "1 to 1000"),
            ("timer", "1001", "1 to 1000"),
            ("timer", "\"yes\"", "e.toml:5:"),
        ] {
            let e = parse(&step(bench, explain), "e.toml", "e").unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.message().contains(says), "{bench} {explain}: {e}");
        }
    }
}
