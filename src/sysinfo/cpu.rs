//! The CPUs: model from `/proc/cpuinfo`, cpufreq governors, cpuidle states.

use std::fs;
use std::path::Path;

use super::{parse_bool, read, CpuGovernor, IdleState};

/// `/proc/cpuinfo` as `key: value` pairs in file order.
pub(super) fn parse_cpuinfo(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

pub(super) fn first<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, v)| k == key && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// The CPU model, per architecture: x86 and most 32-bit ARM kernels have a
/// `model name`; old ARM kernels a `Processor`; arm64 only the implementer and
/// part numbers; PowerPC a `cpu` line plus `platform`, `model` and `machine`.
pub(super) fn cpu_model(pairs: &[(String, String)]) -> Option<String> {
    let arm_cores = arm_cores(pairs);
    if let Some(name) = first(pairs, "model name").or_else(|| first(pairs, "Processor")) {
        return Some(match arm_cores {
            Some(cores) if !name.contains(&cores) => format!("{name} / {cores}"),
            _ => name.to_string(),
        });
    }
    if arm_cores.is_some() {
        return arm_cores;
    }
    if let Some(cpu) = first(pairs, "cpu") {
        let extras: Vec<String> = ["platform", "model", "machine"]
            .iter()
            .filter_map(|k| first(pairs, k).map(|v| format!("{k}: {v}")))
            .collect();
        return Some(if extras.is_empty() {
            cpu.to_string()
        } else {
            format!("{cpu} ({})", extras.join(", "))
        });
    }
    first(pairs, "uarch")
        .or_else(|| first(pairs, "isa"))
        .map(String::from)
}

/// ARM cores from `CPU implementer` / `CPU part`: `ARM Cortex-A72`, or
/// `4x ARM Cortex-A55 + 4x ARM Cortex-A76` on big.LITTLE systems.
fn arm_cores(pairs: &[(String, String)]) -> Option<String> {
    let mut implementer = None;
    let mut cores: Vec<(String, usize)> = Vec::new();
    for (k, v) in pairs {
        match k.as_str() {
            "CPU implementer" => implementer = parse_hex(v),
            "CPU part" => {
                let (Some(imp), Some(part)) = (implementer, parse_hex(v)) else {
                    continue;
                };
                let name = arm_core_name(imp, part);
                match cores.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, count)) => *count += 1,
                    None => cores.push((name, 1)),
                }
            }
            _ => {}
        }
    }
    match cores.as_slice() {
        [] => None,
        [(name, _)] => Some(name.clone()),
        _ => Some(
            cores
                .iter()
                .map(|(name, n)| format!("{n}x {name}"))
                .collect::<Vec<_>>()
                .join(" + "),
        ),
    }
}

fn parse_hex(v: &str) -> Option<u32> {
    u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok()
}

fn arm_core_name(implementer: u32, part: u32) -> String {
    let vendor = match implementer {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x53 => "Samsung",
        0x56 => "Marvell",
        0x61 => "Apple",
        0x69 => "Intel",
        0xc0 => "Ampere",
        _ => return format!("implementer {implementer:#x} part {part:#x}"),
    };
    let core = if implementer == 0x41 {
        match part {
            0xb02 => "ARM11 MPCore",
            0xb36 => "ARM1136",
            0xb56 => "ARM1156",
            0xb76 => "ARM1176",
            0xc05 => "Cortex-A5",
            0xc07 => "Cortex-A7",
            0xc08 => "Cortex-A8",
            0xc09 => "Cortex-A9",
            0xc0d => "Cortex-A12",
            0xc0e => "Cortex-A17",
            0xc0f => "Cortex-A15",
            0xc14 => "Cortex-R4",
            0xc15 => "Cortex-R5",
            0xc20 => "Cortex-M0",
            0xd01 => "Cortex-A32",
            0xd02 => "Cortex-A34",
            0xd03 => "Cortex-A53",
            0xd04 => "Cortex-A35",
            0xd05 => "Cortex-A55",
            0xd06 => "Cortex-A65",
            0xd07 => "Cortex-A57",
            0xd08 => "Cortex-A72",
            0xd09 => "Cortex-A73",
            0xd0a => "Cortex-A75",
            0xd0b => "Cortex-A76",
            0xd0c => "Neoverse-N1",
            0xd0d => "Cortex-A77",
            0xd0e => "Cortex-A76AE",
            0xd40 => "Neoverse-V1",
            0xd41 => "Cortex-A78",
            0xd42 => "Cortex-A78AE",
            0xd44 => "Cortex-X1",
            0xd46 => "Cortex-A510",
            0xd47 => "Cortex-A710",
            0xd48 => "Cortex-X2",
            0xd49 => "Neoverse-N2",
            0xd4a => "Neoverse-E1",
            0xd4b => "Cortex-A78C",
            0xd4d => "Cortex-A715",
            0xd4e => "Cortex-X3",
            0xd4f => "Neoverse-V2",
            0xd80 => "Cortex-A520",
            0xd81 => "Cortex-A720",
            0xd82 => "Cortex-X4",
            _ => return format!("{vendor} part {part:#x}"),
        }
    } else {
        return format!("{vendor} part {part:#x}");
    };
    format!("{vendor} {core}")
}

/// cpufreq governors of every CPU directory that has one, by CPU number.
pub(super) fn governors(root: &Path) -> Vec<CpuGovernor> {
    let mut out: Vec<CpuGovernor> = numbered_dirs(root, "sys/devices/system/cpu", "cpu")
        .into_iter()
        .filter_map(|cpu| {
            let governor = read(
                root,
                &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"),
            )?;
            Some(CpuGovernor { cpu, governor })
        })
        .collect();
    out.sort_by_key(|g| g.cpu);
    out
}

/// The cpuidle states of CPU 0, in state order.
pub(super) fn idle_states(root: &Path) -> Vec<IdleState> {
    let dir = "sys/devices/system/cpu/cpu0/cpuidle";
    let mut states = numbered_dirs(root, dir, "state");
    states.sort_unstable();
    states
        .into_iter()
        .filter_map(|n| {
            let file = |f: &str| read(root, &format!("{dir}/state{n}/{f}"));
            Some(IdleState {
                name: file("name").unwrap_or_else(|| format!("state{n}")),
                latency_us: file("latency")?.parse().ok()?,
                disabled: file("disable").and_then(|t| parse_bool(&t)) == Some(true),
            })
        })
        .collect()
}

/// The numbers N of the entries `<prefix>N` in `root/dir`.
fn numbered_dirs(root: &Path, dir: &str, prefix: &str) -> Vec<usize> {
    let Ok(entries) = fs::read_dir(root.join(dir)) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix(prefix)?
                .parse::<usize>()
                .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_little_and_unknown_arm_cores() {
        let mut text = String::new();
        for part in ["0xd05", "0xd05", "0xd0b"] {
            text.push_str(&format!("CPU implementer\t: 0x41\nCPU part\t: {part}\n\n"));
        }
        text.push_str("CPU implementer\t: 0x51\nCPU part\t: 0x805\n");
        assert_eq!(
            cpu_model(&parse_cpuinfo(&text)).as_deref(),
            Some("2x ARM Cortex-A55 + 1x ARM Cortex-A76 + 1x Qualcomm part 0x805")
        );
    }
}
