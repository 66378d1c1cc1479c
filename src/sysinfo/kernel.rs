//! The kernel: its command line (`isolcpus=`, `nohz_full=`, …) and preemption model.

use crate::units::{format_cpu_list, parse_ranges};

use super::PREEMPT_UNKNOWN;

/// The value of the last `key=value` on the kernel command line.
pub(super) fn cmdline_param(cmdline: &str, key: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .rev()
        .filter_map(|w| w.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// The CPU list of `isolcpus=[flag,...,]<cpus>` (flags such as `nohz`,
/// `domain`, `managed_irq` precede the list).
pub(super) fn isolcpus_cpus(value: &str) -> Option<String> {
    let cpus: Vec<&str> = value
        .split(',')
        .skip_while(|part| !part.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    (!cpus.is_empty()).then(|| cpus.join(","))
}

/// `2,3` → `2-3`; lists the kernel's syntax cannot parse are kept as written.
pub(super) fn normalize_list(text: &str) -> String {
    match parse_ranges(text) {
        Ok(mut cpus) if !cpus.is_empty() => {
            cpus.sort_unstable();
            cpus.dedup();
            format_cpu_list(&cpus)
        }
        _ => text.to_string(),
    }
}

/// Decide the preemption model. `/sys/kernel/realtime` wins, then the
/// `uname -v` tokens; for PREEMPT_DYNAMIC kernels the current mode comes from
/// debugfs (root only), else the `preempt=` boot parameter, else the build
/// default in the kernel config.
pub(super) fn derive_preempt_model(
    realtime_sysfs: Option<bool>,
    version: Option<&str>,
    debug_preempt: Option<&str>,
    cmdline_preempt: Option<&str>,
    config: Option<&str>,
) -> String {
    if realtime_sysfs == Some(true) {
        return "PREEMPT_RT".into();
    }
    let tokens: Vec<&str> = version.unwrap_or("").split_whitespace().collect();
    let has = |t: &str| tokens.contains(&t);
    // Old RT patches wrote "PREEMPT RT", newer kernels "PREEMPT_RT".
    if has("PREEMPT_RT") || tokens.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
        return "PREEMPT_RT".into();
    }
    let config_y =
        |opt: &str| config.is_some_and(|c| c.lines().any(|l| l.trim() == format!("{opt}=y")));
    if has("PREEMPT_DYNAMIC") {
        let mode = debug_preempt
            .and_then(|d| {
                let start = d.find('(')?;
                let end = start + d[start..].find(')')?;
                Some(d[start + 1..end].trim().to_string())
            })
            .filter(|m| !m.is_empty())
            .or_else(|| cmdline_preempt.map(str::to_string))
            .or_else(|| {
                [
                    ("CONFIG_PREEMPT_NONE", "none"),
                    ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
                    ("CONFIG_PREEMPT", "full"),
                    ("CONFIG_PREEMPT_LAZY", "lazy"),
                ]
                .iter()
                .find(|(opt, _)| config_y(opt))
                .map(|(_, mode)| mode.to_string())
            });
        return match mode {
            Some(mode) => format!("PREEMPT_DYNAMIC({mode})"),
            None => "PREEMPT_DYNAMIC".into(),
        };
    }
    if has("PREEMPT") {
        return "PREEMPT".into();
    }
    if let Some(other) = tokens.iter().find(|t| t.starts_with("PREEMPT_")) {
        return other.to_string();
    }
    if config_y("CONFIG_PREEMPT_RT") || config_y("CONFIG_PREEMPT_RT_FULL") {
        return "PREEMPT_RT".into();
    }
    if config_y("CONFIG_PREEMPT") {
        return "PREEMPT".into();
    }
    if config_y("CONFIG_PREEMPT_VOLUNTARY") {
        return "VOLUNTARY".into();
    }
    if config_y("CONFIG_PREEMPT_NONE") {
        return "NONE".into();
    }
    PREEMPT_UNKNOWN.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preempt_model_sources() {
        let d = |v, dbg, cmd, cfg| derive_preempt_model(None, Some(v), dbg, cmd, cfg);
        let dynamic = "#1 SMP PREEMPT_DYNAMIC Mon Nov  4 02:06:24 UTC 2024";
        assert_eq!(
            d(dynamic, Some("none voluntary (full) lazy"), None, None),
            "PREEMPT_DYNAMIC(full)"
        );
        assert_eq!(
            d(dynamic, None, Some("full"), None),
            "PREEMPT_DYNAMIC(full)"
        );
        assert_eq!(
            d(dynamic, None, None, Some("CONFIG_PREEMPT_VOLUNTARY=y\n")),
            "PREEMPT_DYNAMIC(voluntary)"
        );
        assert_eq!(d(dynamic, None, None, None), "PREEMPT_DYNAMIC");
        assert_eq!(d("#1 SMP PREEMPT_RT Tue", None, None, None), "PREEMPT_RT");
        assert_eq!(d("#1 SMP PREEMPT Tue", None, None, None), "PREEMPT");
        assert_eq!(d("#1 SMP Tue", None, None, None), PREEMPT_UNKNOWN);
        assert_eq!(
            d(
                "#1 SMP Tue",
                None,
                None,
                Some("# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_NONE=y")
            ),
            "NONE"
        );
        assert_eq!(
            derive_preempt_model(Some(true), None, None, None, None),
            "PREEMPT_RT"
        );
        assert_eq!(
            derive_preempt_model(None, None, None, None, None),
            PREEMPT_UNKNOWN
        );
    }

    #[test]
    fn isolcpus_flags_are_stripped() {
        assert_eq!(
            isolcpus_cpus("nohz,domain,managed_irq,2-3,5").as_deref(),
            Some("2-3,5")
        );
        assert_eq!(isolcpus_cpus("domain").as_deref(), None);
        assert_eq!(
            cmdline_param("a isolcpus=1 b isolcpus=2-3", "isolcpus").as_deref(),
            Some("2-3")
        );
    }
}
