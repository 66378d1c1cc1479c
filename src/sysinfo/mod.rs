//! What the machine is: kernel, preemption model, command line, CPUs,
//! frequency governors, idle states, clock source, RT throttling and any sign
//! of virtualisation. Stored in every result file and judged by `rtlat check`.
//!
//! Everything is read from files relative to a root directory, so the parsing
//! is tested against captured trees (`tests/fixtures/sysinfo/`). Missing or
//! garbled files leave a field empty; nothing here panics or fails.
//!
//! Here the description and its assembly; `kernel`: command line and
//! preemption model; `cpu`: CPU model, governors, idle states; `virt`:
//! signs of a hypervisor; `emulation`: of a user-mode emulator (qemu-user).

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::units::{format_cpu_list, parse_ranges};

mod cpu;
mod emulation;
mod kernel;
mod virt;

use cpu::{cpu_model, first, governors, idle_states, parse_cpuinfo};
use kernel::{cmdline_param, derive_preempt_model, isolcpus_cpus, normalize_list};
use virt::detect_virtualization;

/// `preempt_model` when nothing tells which model the kernel was built with.
pub const PREEMPT_UNKNOWN: &str = "unknown";

/// `virtualization` when only the x86 `hypervisor` CPU flag shows one.
pub const UNKNOWN_HYPERVISOR: &str = "unknown hypervisor";

/// The cpufreq governor of one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuGovernor {
    pub cpu: usize,
    pub governor: String,
}

/// One cpuidle state of CPU 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IdleState {
    /// The state's name, e.g. `C6` or `WFI`.
    pub name: String,
    /// Exit latency in µs, as the kernel declares it.
    pub latency_us: u64,
    /// Disabled through `stateN/disable`.
    #[serde(default)]
    pub disabled: bool,
}

/// The system description. Every field may be empty: old or partial result
/// files parse (`#[serde(default)]`), and unreadable files leave `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct SystemInfo {
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `uname -v`, e.g. `#1 SMP PREEMPT_RT Tue Mar 5 14:12:40 CET 2024`.
    pub kernel_version: Option<String>,
    /// `uname -m`, e.g. `x86_64`, `aarch64`, `armv7l`, `ppc`.
    pub machine: Option<String>,
    /// `PREEMPT_RT`, `PREEMPT`, `PREEMPT_DYNAMIC(<mode>)` (or bare
    /// `PREEMPT_DYNAMIC` when the mode cannot be read), `VOLUNTARY`, `NONE`
    /// or `unknown`.
    pub preempt_model: String,
    /// `/sys/kernel/realtime` (present on PREEMPT_RT kernels).
    pub realtime_sysfs: Option<bool>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    pub cpu_model: Option<String>,
    /// The `Hardware` line of `/proc/cpuinfo` (32-bit ARM kernels).
    pub hardware: Option<String>,
    /// Number of online CPUs (0 when unknown).
    pub cpu_count: usize,
    /// Online CPUs in the kernel's list syntax, e.g. `0-3`.
    pub online_cpus: Option<String>,
    /// `/proc/device-tree/model`.
    pub device_tree_model: Option<String>,
    /// The DMI product name, `/sys/class/dmi/id/product_name` (PCs and
    /// servers; boards have a device-tree model instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dmi_product: Option<String>,
    /// CPUs isolated from the scheduler: `/sys/devices/system/cpu/isolated`,
    /// or else the CPUs of the `isolcpus=` boot parameter.
    pub isolcpus: Option<String>,
    /// The raw `isolcpus=` boot parameter, flags included.
    pub isolcpus_cmdline: Option<String>,
    /// Tickless CPUs: `/sys/devices/system/cpu/nohz_full`, or else `nohz_full=`.
    pub nohz_full: Option<String>,
    /// The `rcu_nocbs=` boot parameter.
    pub rcu_nocbs: Option<String>,
    pub clocksource: Option<String>,
    pub available_clocksources: Vec<String>,
    /// cpufreq governor per CPU; empty without cpufreq.
    pub governors: Vec<CpuGovernor>,
    /// `/sys/devices/system/cpu/smt/active`.
    pub smt_active: Option<bool>,
    pub cpuidle_driver: Option<String>,
    /// The idle states of CPU 0.
    pub idle_states: Vec<IdleState>,
    pub sched_rt_runtime_us: Option<i64>,
    pub sched_rt_period_us: Option<i64>,
    /// The hypervisor this runs under (`QEMU`, `KVM`, `VMware`, `Xen`, …);
    /// `None` when there is no sign of virtualisation.
    pub virtualization: Option<String>,
    /// `/proc/sys/kernel/timer_migration`.
    pub timer_migration: Option<bool>,
    /// The user-mode emulator this binary ran under and what showed it,
    /// e.g. `qemu-user (binfmt_misc qemu-arm: …): a binary for arm on a
    /// kernel for x86_64`; absent on a CPU of the binary's architecture. The
    /// rest of the description is then the host's (uname's machine aside).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulation: Option<String>,
}

impl Default for SystemInfo {
    fn default() -> Self {
        SystemInfo {
            hostname: None,
            kernel_release: None,
            kernel_version: None,
            machine: None,
            preempt_model: PREEMPT_UNKNOWN.to_string(),
            realtime_sysfs: None,
            cmdline: None,
            cpu_model: None,
            hardware: None,
            cpu_count: 0,
            online_cpus: None,
            device_tree_model: None,
            dmi_product: None,
            isolcpus: None,
            isolcpus_cmdline: None,
            nohz_full: None,
            rcu_nocbs: None,
            clocksource: None,
            available_clocksources: Vec::new(),
            governors: Vec::new(),
            smt_active: None,
            cpuidle_driver: None,
            idle_states: Vec::new(),
            sched_rt_runtime_us: None,
            sched_rt_period_us: None,
            virtualization: None,
            timer_migration: None,
            emulation: None,
        }
    }
}

/// The kernel's names as uname(2) reports them.
struct Names {
    hostname: Option<String>,
    release: Option<String>,
    version: Option<String>,
    machine: Option<String>,
}

impl SystemInfo {
    /// Describe the running system.
    pub fn collect() -> SystemInfo {
        let names = crate::sys::uname().ok().map(|u| Names {
            hostname: non_empty(u.nodename),
            release: non_empty(u.release),
            version: non_empty(u.version),
            machine: non_empty(u.machine),
        });
        let mut info = collect(Path::new("/"), names, Some(std::env::consts::ARCH));
        // CPUID names the hypervisor when DMI and sysfs do not (e.g. Firecracker).
        if matches!(
            info.virtualization.as_deref(),
            None | Some(UNKNOWN_HYPERVISOR)
        ) {
            if let Some(hv) = crate::sys::probe::cpuid_hypervisor() {
                info.virtualization = Some(hv);
            }
        }
        if info.cpu_count == 0 {
            let cpus = online_cpus();
            info.cpu_count = cpus.len();
            info.online_cpus = Some(format_cpu_list(&cpus));
        }
        info
    }

    /// Describe the system whose `/proc` and `/sys` are found under `root`
    /// (a captured tree). The uname fields come from
    /// `proc/sys/kernel/{hostname,osrelease,version,arch}`.
    pub fn collect_from(root: &Path) -> SystemInfo {
        collect(root, None, None)
    }

    /// The note a result carries when its figures are an emulator's.
    pub fn emulation_note(&self) -> Option<String> {
        let e = self.emulation.as_deref()?;
        Some(format!(
            "emulated: ran under {e}; the figures are the emulator's and the host's scheduler's, \
             not those of {} hardware, and the system description is the host's",
            self.machine.as_deref().unwrap_or("board")
        ))
    }

    /// What board the machine is: its device-tree model, else its DMI
    /// product name, else the `Hardware` line of a 32-bit ARM kernel.
    pub fn board_model(&self) -> Option<&str> {
        [&self.device_tree_model, &self.dmi_product, &self.hardware]
            .into_iter()
            .filter_map(|m| m.as_deref().map(str::trim))
            .find(|m| !m.is_empty())
    }
}

/// The online CPUs, from `/sys/devices/system/cpu/online`; when that cannot
/// be read, `0..available_parallelism`.
pub fn online_cpus() -> Vec<usize> {
    read(Path::new("/"), "sys/devices/system/cpu/online")
        .and_then(|t| parse_ranges(&t).ok())
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        })
}

/// The hypervisor this machine runs under, if any: what
/// [`SystemInfo::collect`] records, read alone for a run's set-up.
pub fn virtualization() -> Option<String> {
    let root = Path::new("/");
    let cpuinfo = parse_cpuinfo(&read(root, "proc/cpuinfo").unwrap_or_default());
    let dt_model = read(root, "proc/device-tree/model")
        .or_else(|| read(root, "sys/firmware/devicetree/base/model"));
    detect_virtualization(root, &cpuinfo, dt_model.as_deref())
}

/// Whether the running kernel is PREEMPT_RT (`/sys/kernel/realtime`, else
/// `uname -v`), read at once for choices a run makes by default.
pub fn is_preempt_rt() -> bool {
    let root = Path::new("/");
    let realtime = read(root, "sys/kernel/realtime").and_then(|t| parse_bool(&t));
    let version = read(root, "proc/sys/kernel/version");
    derive_preempt_model(realtime, version.as_deref(), None, None, None) == "PREEMPT_RT"
}

/// The description of the system under `root`; `binary_arch`, the running
/// binary's architecture, when it is the live system (to tell emulation).
fn collect(root: &Path, names: Option<Names>, binary_arch: Option<&str>) -> SystemInfo {
    let names = names.unwrap_or_else(|| Names {
        hostname: read(root, "proc/sys/kernel/hostname"),
        release: read(root, "proc/sys/kernel/osrelease"),
        version: read(root, "proc/sys/kernel/version"),
        machine: read(root, "proc/sys/kernel/arch"),
    });
    let cmdline = read(root, "proc/cmdline");
    let param = |key: &str| cmdline.as_deref().and_then(|c| cmdline_param(c, key));
    let cpuinfo = read(root, "proc/cpuinfo").unwrap_or_default();
    let cpuinfo = parse_cpuinfo(&cpuinfo);

    let realtime_sysfs = read(root, "sys/kernel/realtime").and_then(|t| parse_bool(&t));
    let config = names
        .release
        .as_deref()
        .and_then(|r| read(root, &format!("boot/config-{r}")));
    let preempt_model = derive_preempt_model(
        realtime_sysfs,
        names.version.as_deref(),
        read(root, "sys/kernel/debug/sched/preempt").as_deref(),
        param("preempt").as_deref(),
        config.as_deref(),
    );

    let (cpu_count, online) = match read(root, "sys/devices/system/cpu/online")
        .and_then(|t| parse_ranges(&t).ok())
        .filter(|c| !c.is_empty())
    {
        Some(cpus) => (cpus.len(), Some(format_cpu_list(&cpus))),
        None => {
            // The processor numbers /proc/cpuinfo lists are the online CPUs.
            let mut cpus: Vec<usize> = cpuinfo
                .iter()
                .filter(|(k, _)| k == "processor")
                .filter_map(|(_, v)| v.parse().ok())
                .collect();
            cpus.sort_unstable();
            cpus.dedup();
            let list = (!cpus.is_empty()).then(|| format_cpu_list(&cpus));
            (cpus.len(), list)
        }
    };

    let device_tree_model = read(root, "proc/device-tree/model")
        .or_else(|| read(root, "sys/firmware/devicetree/base/model"));

    let isolcpus_cmdline = param("isolcpus");
    let isolcpus = read(root, "sys/devices/system/cpu/isolated").or_else(|| {
        isolcpus_cmdline
            .as_deref()
            .and_then(isolcpus_cpus)
            .map(|c| normalize_list(&c))
    });
    let nohz_full = read(root, "sys/devices/system/cpu/nohz_full")
        .filter(|t| t != "(null)")
        .or_else(|| param("nohz_full").map(|c| normalize_list(&c)));

    let clocksource_dir = "sys/devices/system/clocksource/clocksource0";
    let available_clocksources = read(root, &format!("{clocksource_dir}/available_clocksource"))
        .map(|t| t.split_whitespace().map(String::from).collect())
        .unwrap_or_default();

    let mut info = SystemInfo {
        hostname: names.hostname,
        kernel_release: names.release,
        kernel_version: names.version,
        machine: names.machine,
        preempt_model,
        realtime_sysfs,
        cmdline: None,
        cpu_model: cpu_model(&cpuinfo),
        hardware: first(&cpuinfo, "Hardware").map(String::from),
        cpu_count,
        online_cpus: online,
        device_tree_model,
        dmi_product: read(root, "sys/class/dmi/id/product_name"),
        isolcpus,
        isolcpus_cmdline,
        nohz_full,
        rcu_nocbs: param("rcu_nocbs"),
        clocksource: read(root, &format!("{clocksource_dir}/current_clocksource")),
        available_clocksources,
        governors: governors(root),
        smt_active: read(root, "sys/devices/system/cpu/smt/active").and_then(|t| parse_bool(&t)),
        cpuidle_driver: read(root, "sys/devices/system/cpu/cpuidle/current_driver"),
        idle_states: idle_states(root),
        sched_rt_runtime_us: read(root, "proc/sys/kernel/sched_rt_runtime_us")
            .and_then(|t| t.parse().ok()),
        sched_rt_period_us: read(root, "proc/sys/kernel/sched_rt_period_us")
            .and_then(|t| t.parse().ok()),
        virtualization: None,
        timer_migration: read(root, "proc/sys/kernel/timer_migration").and_then(|t| parse_bool(&t)),
        emulation: binary_arch.and_then(|arch| {
            emulation::detect_emulation(root, arch, &emulation::exe_head(root), &cpuinfo)
        }),
    };
    info.virtualization = detect_virtualization(root, &cpuinfo, info.device_tree_model.as_deref());
    info.cmdline = cmdline;
    info
}

/// Read a small text file below `root`, trimmed of whitespace and NULs;
/// `None` when missing, unreadable or empty.
fn read(root: &Path, rel: &str) -> Option<String> {
    let bytes = fs::read(root.join(rel)).ok()?;
    // Device-tree strings end in NUL; keep only the first string.
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
    non_empty(String::from_utf8_lossy(bytes).trim().to_string())
}

fn non_empty(s: String) -> Option<String> {
    let t = s.trim();
    if t.is_empty() {
        None
    } else if t.len() == s.len() {
        Some(s)
    } else {
        Some(t.to_string())
    }
}

fn parse_bool(t: &str) -> Option<bool> {
    match t.trim() {
        "1" | "Y" | "y" | "on" => Some(true),
        "0" | "N" | "n" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> SystemInfo {
        let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sysinfo")
            .join(name);
        assert!(root.is_dir(), "missing fixture {}", root.display());
        SystemInfo::collect_from(&root)
    }

    /// Host name, kernel release and machine.
    fn identity(s: &SystemInfo) -> (Option<&str>, Option<&str>, Option<&str>) {
        (
            s.hostname.as_deref(),
            s.kernel_release.as_deref(),
            s.machine.as_deref(),
        )
    }

    fn governors(s: &SystemInfo) -> Vec<&str> {
        s.governors.iter().map(|g| g.governor.as_str()).collect()
    }

    #[test]
    fn x86_64_kvm_guest() {
        let s = fixture("x86_64");
        assert_eq!(
            identity(&s),
            (
                Some("ci-runner-07"),
                Some("6.8.0-49-generic"),
                Some("x86_64")
            )
        );
        assert_eq!(s.preempt_model, "PREEMPT_DYNAMIC(voluntary)");
        assert_eq!(s.realtime_sysfs, None);
        assert_eq!(
            s.cpu_model.as_deref(),
            Some("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz")
        );
        assert_eq!(s.cpu_count, 4);
        assert_eq!(s.online_cpus.as_deref(), Some("0-3"));
        assert_eq!(s.device_tree_model, None);
        assert_eq!(s.virtualization.as_deref(), Some("QEMU"));
        assert_eq!(s.clocksource.as_deref(), Some("kvm-clock"));
        assert_eq!(s.available_clocksources, ["kvm-clock", "tsc", "acpi_pm"]);
        assert!(s.governors.is_empty());
        assert_eq!(s.smt_active, Some(false));
        assert_eq!(s.isolcpus, None);
        assert_eq!(s.nohz_full, None);
        assert_eq!(s.cpuidle_driver.as_deref(), Some("none"));
        assert!(s.idle_states.is_empty());
        assert_eq!(s.sched_rt_runtime_us, Some(950_000));
        assert_eq!(s.sched_rt_period_us, Some(1_000_000));
        assert_eq!(s.timer_migration, Some(true));
        assert!(s.cmdline.as_deref().unwrap().starts_with("BOOT_IMAGE="));
    }

    #[test]
    fn aarch64_raspberry_pi() {
        let s = fixture("aarch64");
        assert_eq!(s.machine.as_deref(), Some("aarch64"));
        assert_eq!(s.preempt_model, "PREEMPT");
        assert_eq!(s.cpu_model.as_deref(), Some("ARM Cortex-A72"));
        assert_eq!(
            s.device_tree_model.as_deref(),
            Some("Raspberry Pi 4 Model B Rev 1.4")
        );
        assert_eq!(s.cpu_count, 4);
        assert_eq!(governors(&s), ["ondemand"; 4]);
        assert_eq!(
            s.governors.iter().map(|g| g.cpu).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(s.clocksource.as_deref(), Some("arch_sys_counter"));
        assert_eq!(s.virtualization, None);
        assert_eq!(s.smt_active, None);
    }

    #[test]
    fn armv7_imx6_old_rt_patch() {
        let s = fixture("armv7");
        assert_eq!(s.machine.as_deref(), Some("armv7l"));
        // No /sys/kernel/realtime: "PREEMPT RT" in uname -v decides.
        assert_eq!(s.realtime_sysfs, None);
        assert_eq!(s.preempt_model, "PREEMPT_RT");
        assert_eq!(
            s.cpu_model.as_deref(),
            Some("ARMv7 Processor rev 10 (v7l) / ARM Cortex-A9")
        );
        assert_eq!(
            s.hardware.as_deref(),
            Some("Freescale i.MX6 Quad/DualLite (Device Tree)")
        );
        assert_eq!(
            s.device_tree_model.as_deref(),
            Some("Freescale i.MX6 Quad SABRE Smart Device Board")
        );
        assert_eq!(s.cpu_count, 4);
        assert_eq!(governors(&s), ["performance"; 4]);
        assert_eq!(s.isolcpus.as_deref(), Some("2-3"));
        assert_eq!(s.isolcpus_cmdline.as_deref(), Some("2,3"));
        assert_eq!(s.nohz_full.as_deref(), Some("2-3"));
        assert_eq!(s.rcu_nocbs.as_deref(), Some("2,3"));
        assert_eq!(s.cpuidle_driver.as_deref(), Some("imx6q_cpuidle"));
        assert_eq!(
            s.idle_states,
            [
                IdleState {
                    name: "WFI".into(),
                    latency_us: 1,
                    disabled: false
                },
                IdleState {
                    name: "WAIT".into(),
                    latency_us: 50,
                    disabled: false
                },
            ]
        );
        assert_eq!(s.sched_rt_runtime_us, Some(-1));
        assert_eq!(s.timer_migration, Some(false));
        assert_eq!(s.virtualization, None);
    }

    #[test]
    fn ppc32_mpc8315_preempt_rt() {
        let s = fixture("ppc");
        assert_eq!(
            identity(&s),
            (Some("mpc8315erdb"), Some("6.6.21-rt26"), Some("ppc"))
        );
        assert_eq!(s.realtime_sysfs, Some(true));
        assert_eq!(s.preempt_model, "PREEMPT_RT");
        assert_eq!(
            s.cpu_model.as_deref(),
            Some("e300c3 (platform: MPC831x RDB, model: MPC8315ERDB)")
        );
        assert_eq!(s.device_tree_model.as_deref(), Some("MPC8315ERDB"));
        assert_eq!(s.cpu_count, 1);
        assert_eq!(s.online_cpus.as_deref(), Some("0"));
        assert!(s.governors.is_empty());
        assert_eq!(s.clocksource.as_deref(), Some("timebase"));
        assert_eq!(s.sched_rt_runtime_us, Some(-1));
        assert_eq!(s.virtualization, None);
        assert_eq!(s.timer_migration, None);
    }

    #[test]
    fn empty_root_gives_an_empty_description() {
        let dir = tempfile::tempdir().unwrap();
        let s = SystemInfo::collect_from(dir.path());
        assert_eq!(s, SystemInfo::default());
        assert_eq!(s.preempt_model, PREEMPT_UNKNOWN);
        let s = SystemInfo::collect_from(&dir.path().join("does-not-exist"));
        assert_eq!(s, SystemInfo::default());
    }

    #[test]
    fn garbled_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let put = |rel: &str, bytes: &[u8]| {
            let p = root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, bytes).unwrap();
        };
        put("proc/cpuinfo", b"\xff\xfe garbage\nCPU part: zz\n:::\n");
        put("sys/devices/system/cpu/online", b"0-x");
        put("proc/sys/kernel/sched_rt_runtime_us", b"lots");
        put("sys/devices/system/cpu/cpu0/cpuidle/state0/latency", b"-");
        put("sys/devices/system/cpu/smt/active", b"maybe");
        let s = SystemInfo::collect_from(root);
        assert_eq!(s.cpu_count, 0);
        assert_eq!(s.sched_rt_runtime_us, None);
        assert!(s.idle_states.is_empty());
        assert_eq!(s.smt_active, None);
    }

    #[test]
    fn serde_round_trip_and_partial_files() {
        let s = fixture("armv7");
        let json = serde_json::to_string(&s).unwrap();
        let back: SystemInfo = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let partial: SystemInfo =
            serde_json::from_str(r#"{"hostname":"a","future_field":1}"#).unwrap();
        assert_eq!(partial.hostname.as_deref(), Some("a"));
        assert_eq!(partial.preempt_model, PREEMPT_UNKNOWN);
    }

    #[test]
    fn live_system_does_not_panic() {
        let s = SystemInfo::collect();
        assert!(s.cpu_count >= 1);
        assert!(!online_cpus().is_empty());
        assert!(s.kernel_release.is_some());
    }
}
