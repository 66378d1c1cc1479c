//! What the tools tell of the machine: `uname` fields and the preemption model.

use super::json::Node;
use super::Parsed;
use crate::sysinfo::SystemInfo;

/// The preemption model named in a `uname -v` string.
pub fn preempt_from_version(version: &str) -> String {
    let tokens: Vec<&str> = version.split_whitespace().collect();
    if tokens.contains(&"PREEMPT_RT") || tokens.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
        "PREEMPT_RT".into()
    } else if tokens.contains(&"PREEMPT_DYNAMIC") {
        "PREEMPT_DYNAMIC".into()
    } else if tokens.contains(&"PREEMPT") {
        "PREEMPT".into()
    } else {
        crate::sysinfo::PREEMPT_UNKNOWN.into()
    }
}

/// The `uname` fields of a tool's JSON `sysinfo` object (cyclictest and
/// jitterdebugger write the same ones), and the preemption model `version` names.
pub fn uname(si: &Node, s: &mut SystemInfo) -> Parsed<()> {
    si.members("sysinfo")?;
    let text = |k: &str| -> Parsed<Option<String>> {
        si.get(k).map(|n| n.str(k).map(str::to_string)).transpose()
    };
    s.hostname = text("nodename")?;
    s.kernel_release = text("release")?;
    s.kernel_version = text("version")?;
    s.machine = text("machine")?;
    s.preempt_model = preempt_from_version(s.kernel_version.as_deref().unwrap_or(""));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preempt_models() {
        assert_eq!(preempt_from_version("#1 SMP PREEMPT_RT Tue"), "PREEMPT_RT");
        assert_eq!(preempt_from_version("#1 SMP PREEMPT RT Tue"), "PREEMPT_RT");
        assert_eq!(
            preempt_from_version("#1 SMP PREEMPT_DYNAMIC @0"),
            "PREEMPT_DYNAMIC"
        );
        assert_eq!(
            preempt_from_version("#1 SMP"),
            crate::sysinfo::PREEMPT_UNKNOWN
        );
    }

    #[test]
    fn uname_fields() {
        let n = super::super::json::parse(
            "{\"nodename\": \"vm\", \"release\": \"6.1\", \"version\": \"#1 PREEMPT_RT\"}",
        )
        .unwrap();
        let mut s = SystemInfo::default();
        uname(&n, &mut s).unwrap();
        assert_eq!(s.hostname.as_deref(), Some("vm"));
        assert_eq!(s.kernel_release.as_deref(), Some("6.1"));
        assert_eq!(s.preempt_model, "PREEMPT_RT");
        assert!(s.machine.is_none());
    }
}
