//! The arguments of one load: the forms a bare argument takes (count, size,
//! rate, duration, `flood`), the shape of each load ([`LoadShape`]: which bare
//! forms it takes) and the checks every load's parser uses on its keys.

use serde_json::{Map, Value};

/// Most workers (threads or processes) one load may ask for.
pub const MAX_WORKERS: usize = 4096;

/// A parse error of one load: a message without the load's token (added by
/// [`parse_spec`]).
pub type ArgResult<T> = std::result::Result<T, String>;

/// A JSON object's map (empty for anything else).
pub fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A load: its name and what its bare arguments may be.
pub struct LoadShape {
    pub name: &'static str,
    /// What a bare count counts (`worker count` …); empty when it takes none.
    pub count: &'static str,
    /// A bare size is the load's size.
    pub size: bool,
    /// A bare rate (or `flood`) is the load's rate.
    pub rate: bool,
    /// A bare duration is the load's period.
    pub period: bool,
    /// Shown when an argument has the wrong form.
    pub example: &'static str,
}

impl LoadShape {
    /// A load named `name` whose bare number is its worker count, taking no
    /// bare size, rate or period.
    pub const fn new(name: &'static str, example: &'static str) -> LoadShape {
        LoadShape {
            name,
            count: "worker count",
            size: false,
            rate: false,
            period: false,
            example,
        }
    }

    /// The same, its bare number counting something else (empty: no count).
    pub const fn counting(self, count: &'static str) -> LoadShape {
        LoadShape { count, ..self }
    }

    /// The same, with a bare size.
    pub const fn sized(self) -> LoadShape {
        LoadShape { size: true, ..self }
    }

    /// The same, with a bare rate (or `flood`).
    pub const fn rated(self) -> LoadShape {
        LoadShape { rate: true, ..self }
    }

    /// The same, with a bare period.
    pub const fn periodic(self) -> LoadShape {
        LoadShape {
            period: true,
            ..self
        }
    }

    /// The error for a bare argument of a form this load does not take.
    fn not_a(&self, a: &str) -> String {
        let mut forms = Vec::new();
        if !self.count.is_empty() {
            forms.push(format!("a {}", self.count));
        }
        if self.size {
            forms.push("a size".to_string());
        }
        if self.rate {
            forms.push("a rate such as 4MB/s".to_string());
            forms.push("'flood'".to_string());
        }
        if self.period {
            forms.push("a period".to_string());
        }
        forms.push("a key=value parameter".to_string());
        let last = forms.pop().unwrap_or_default();
        let forms = if forms.is_empty() {
            last
        } else {
            format!("{} or {last}", forms.join(", "))
        };
        format!("'{a}' is not {forms} (examples: {})", self.example)
    }
}

/// The arguments of one load, bare ones sorted by form; the keys are left to
/// the load's parser.
pub struct Args<'a> {
    pub(super) kind: &'static LoadShape,
    /// The bare count (workers, groups or threads).
    pub count: Option<usize>,
    pub size: Option<u64>,
    /// `Some(None)` is flood.
    pub rate: Option<Option<u64>>,
    pub period: Option<u64>,
    /// `key=value` arguments in the order given.
    pub keys: Vec<(&'a str, &'a str)>,
    /// `cmd=`: the rest of the load (exec only).
    pub command: Option<String>,
}

impl<'a> Args<'a> {
    /// The error for a key this load does not know; `known` lists its keys.
    pub fn unknown_key(&self, k: &str, known: &str) -> String {
        format!("unknown parameter '{k}' (for {}: {known})", self.kind.name)
    }

    /// The bare count given as `k=v` instead (at most `max`).
    pub fn set_count(&mut self, k: &str, v: &str, max: usize) -> ArgResult<()> {
        set(&mut self.count, key_count(k, v, max)?, self.kind.count)
    }

    /// Read the keys of a load whose only key is `workers` (`known`: what the
    /// error for another key lists).
    pub fn workers_only(&mut self, known: &str) -> ArgResult<()> {
        for (k, v) in std::mem::take(&mut self.keys) {
            match k {
                "workers" => self.set_count(k, v, MAX_WORKERS)?,
                _ => return Err(self.unknown_key(k, known)),
            }
        }
        Ok(())
    }

    /// Sort one bare argument (or keep a key for the load's parser).
    pub(super) fn add(&mut self, a: &'a str) -> ArgResult<()> {
        let kind = self.kind;
        if a.is_empty() {
            return Err(format!("an empty argument (examples: {})", kind.example));
        }
        match classify(a) {
            Ok(Arg::Key(k, v)) => self.keys.push((k, v)),
            Ok(Arg::Count(n)) if !kind.count.is_empty() => set(
                &mut self.count,
                count(n, kind.count, MAX_WORKERS)?,
                kind.count,
            )?,
            Ok(Arg::Size(s)) if kind.size => set(&mut self.size, s, "size")?,
            Ok(Arg::Rate(r)) if kind.rate => {
                if r == 0 {
                    return Err("the rate must be above 0 bytes/s (or use 'flood')".into());
                }
                set(&mut self.rate, Some(r), "rate")?
            }
            Ok(Arg::Flood) if kind.rate => set(&mut self.rate, None, "rate")?,
            Ok(Arg::Duration(d)) if kind.period => set(&mut self.period, d, "period")?,
            _ => return Err(kind.not_a(a)),
        }
        Ok(())
    }
}

/// A bare argument, classified by its form.
enum Arg<'a> {
    Count(u64),
    Size(u64),
    Rate(u64),
    Duration(u64),
    Flood,
    Key(&'a str, &'a str),
}

fn classify(arg: &str) -> ArgResult<Arg<'_>> {
    if let Some((k, v)) = arg.split_once('=') {
        return Ok(Arg::Key(k.trim(), v.trim()));
    }
    if arg.eq_ignore_ascii_case("flood") {
        return Ok(Arg::Flood);
    }
    if !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_digit()) {
        return arg
            .parse()
            .map(Arg::Count)
            .map_err(|_| format!("'{arg}' is too large"));
    }
    if let Some(r) = arg.strip_suffix("/s") {
        return parse_size(r).map(Arg::Rate);
    }
    if let Ok(s) = parse_size(arg) {
        return Ok(Arg::Size(s));
    }
    if let Ok(d) = crate::units::parse_duration_ns(arg) {
        return Ok(Arg::Duration(d));
    }
    Err(String::new())
}

/// A size: a number and a unit (B, K, KB, KiB, M, MB, MiB, G, GB, GiB); a bare number is bytes.
pub fn parse_size(text: &str) -> ArgResult<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("'{t}' is not a size such as 4096, 64K or 32M");
    if num.is_empty() || num.matches('.').count() > 1 {
        return Err(bad());
    }
    let scale: f64 = match unit {
        "" | "B" => 1.0,
        "K" | "k" | "KiB" => 1024.0,
        "KB" | "kB" => 1e3,
        "M" | "MiB" => 1024.0 * 1024.0,
        "MB" => 1e6,
        "G" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "GB" => 1e9,
        _ => return Err(bad()),
    };
    let v = crate::units::parse_decimal(num).ok_or_else(bad)?;
    let bytes = (v * scale).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("'{t}' is too large"));
    }
    Ok(bytes as u64)
}

/// A count of `what`: 1 to `max`.
pub fn count(v: u64, what: &str, max: usize) -> ArgResult<usize> {
    if v == 0 {
        return Err(format!("the {what} must be at least 1"));
    }
    if v > max as u64 {
        return Err(format!("{v} {what} is too many (at most {max})"));
    }
    Ok(v as usize)
}

/// `k=v` as a count of 1 to `max`.
pub fn key_count(k: &str, v: &str, max: usize) -> ArgResult<usize> {
    let n: u64 = v
        .parse()
        .map_err(|_| format!("{k}='{v}' is not a whole number"))?;
    count(n, k, max)
}

/// `k=v` as a size.
pub fn key_size(k: &str, v: &str) -> ArgResult<u64> {
    parse_size(v).map_err(|e| format!("{k}: {e}"))
}

/// A range check: `Err` with the message unless `ok`.
pub fn ensure(ok: bool, message: impl FnOnce() -> String) -> ArgResult<()> {
    if ok {
        Ok(())
    } else {
        Err(message())
    }
}

/// Assign once: the same parameter given twice is an error.
pub fn set<T>(slot: &mut Option<T>, v: T, what: &str) -> ArgResult<()> {
    if slot.is_some() {
        return Err(format!("the {what} is given twice"));
    }
    *slot = Some(v);
    Ok(())
}
