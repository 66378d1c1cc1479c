//! The individual checks: one [`Factor`] per aspect of the system, judged
//! from a [`SystemInfo`] and the probed [`Permissions`].

use crate::sys::tracefs::Capabilities;
use crate::sysinfo::{SystemInfo, PREEMPT_UNKNOWN};
use crate::units::{format_cpu_list, parse_ranges};

use super::{bytes, Factor, Permissions, Verdict};

/// Below this RLIMIT_MEMLOCK, locking the whole process (with a few thread
/// stacks) is likely to fail.
const MEMLOCK_COMFORTABLE: u64 = 256 << 20;

/// The default `--priority` of the measuring threads (see cli.rs).
const DEFAULT_PRIORITY: u64 = 80;

/// Idle states with a longer exit latency (µs) count as deep.
const DEEP_IDLE_US: u64 = 10;

const PRIVILEGE_FIX: &str =
    "run as root or: setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtlat); or use --policy other";

/// Judge the system, one factor per aspect, in a fixed order.
pub fn assess(sys: &SystemInfo, perms: &Permissions) -> Vec<Factor> {
    vec![
        preempt(sys, perms),
        rt_throttling(sys),
        governor(sys),
        smt(sys),
        isolation(sys),
        idle_states(sys, perms),
        dma_latency(sys, perms),
        clocksource(sys),
        rt_scheduling(perms),
        mlock(perms),
        virtualization(sys),
        emulation(sys),
        timer_migration(sys),
    ]
}

/// The architecture families whose hints differ.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arch {
    X86,
    Arm64,
    Arm32,
    PowerPc,
    Other,
}

/// The machine's architecture, from `uname -m`: the hints name what exists there.
fn arch(sys: &SystemInfo) -> Arch {
    let m = sys.machine.as_deref().unwrap_or("");
    if m == "x86_64" || m.starts_with('i') && m.ends_with("86") {
        Arch::X86
    } else if m == "aarch64" || m == "arm64" {
        Arch::Arm64
    } else if m.starts_with("arm") {
        Arch::Arm32
    } else if m.starts_with("ppc") || m.starts_with("powerpc") {
        Arch::PowerPc
    } else {
        Arch::Other
    }
}

/// Where a PREEMPT_RT kernel for this machine comes from.
fn rt_kernel(sys: &SystemInfo) -> &'static str {
    match arch(sys) {
        Arch::X86 => "most distributions ship one: Debian's linux-image-rt-amd64, RHEL's kernel-rt, Ubuntu's realtime kernel",
        Arch::Arm64 => "Debian's linux-image-rt-arm64, or the board vendor's kernel built with it",
        Arch::Arm32 => "Debian's linux-image-rt-armmp, or the board vendor's kernel built with it",
        Arch::PowerPc => "no distribution ships one for 32-bit PowerPC: build the board's kernel with it",
        Arch::Other => "your distribution's realtime kernel, or the kernel built with it",
    }
}

fn preempt(sys: &SystemInfo, perms: &Permissions) -> Factor {
    use Verdict::*;
    const NAME: &str = "preempt model";
    let fix = format!(
        "boot a PREEMPT_RT kernel (CONFIG_PREEMPT_RT=y; {})",
        rt_kernel(sys)
    );
    let model = sys.preempt_model.as_str();
    let release = sys.kernel_release.as_deref().unwrap_or("unknown release");
    let (verdict, detail) = match model {
        "PREEMPT_RT" => (Good, format!("PREEMPT_RT ({release})")),
        "PREEMPT" => (
            Warn,
            format!("PREEMPT ({release}): fully preemptible, but interrupts and spinlocks still block"),
        ),
        "PREEMPT_DYNAMIC(full)" | "PREEMPT_DYNAMIC(lazy)" => (
            Warn,
            format!("{model} ({release}): preemptible, but interrupts and spinlocks still block"),
        ),
        "PREEMPT_DYNAMIC" => (
            Warn,
            format!(
                "PREEMPT_DYNAMIC ({release}): mode unknown ({}; no preempt= boot parameter, no /boot/config-{release})",
                perms.debugfs.as_ref().err().map_or("sched/preempt named no mode", String::as_str)
            ),
        ),
        "VOLUNTARY" | "NONE" | "PREEMPT_DYNAMIC(voluntary)" | "PREEMPT_DYNAMIC(none)" => (
            Bad,
            format!("{model} ({release}): kernel code runs unpreempted for milliseconds"),
        ),
        PREEMPT_UNKNOWN | "" => match sys.kernel_version.as_deref() {
            Some(v) if !v.contains("PREEMPT") => (
                Bad,
                format!("not preemptible ({release}): no PREEMPT in uname -v '{v}'"),
            ),
            _ => (Warn, format!("could not determine the preemption model ({release})")),
        },
        other if other.starts_with("PREEMPT") => (Warn, format!("{other} ({release})")),
        other => (Warn, format!("unrecognised preemption model '{other}' ({release})")),
    };
    let factor = Factor::new(NAME, verdict, detail);
    match verdict {
        Good | Info => factor,
        _ if model.starts_with("PREEMPT_DYNAMIC") => {
            factor.fix(format!("boot with preempt=full, or better: {fix}"))
        }
        _ => factor.fix(fix),
    }
}

fn rt_throttling(sys: &SystemInfo) -> Factor {
    const NAME: &str = "RT throttling";
    match (sys.sched_rt_runtime_us, sys.sched_rt_period_us) {
        (Some(-1), _) => Factor::good(NAME, "off (sched_rt_runtime_us = -1)"),
        (Some(runtime), period) => {
            let period = period.filter(|&p| p > 0).unwrap_or(1_000_000);
            let pct = runtime as f64 * 100.0 / period as f64;
            Factor::warn(
                NAME,
                format!(
                    "RT tasks are throttled to {runtime} us every {period} us ({pct:.0}%): \
                     a busy RT thread is stopped for the rest of the period"
                ),
            )
            .fix("echo -1 > /proc/sys/kernel/sched_rt_runtime_us")
        }
        (None, _) => Factor::info(NAME, "sched_rt_runtime_us not readable"),
    }
}

fn governor(sys: &SystemInfo) -> Factor {
    const NAME: &str = "CPU governor";
    if sys.governors.is_empty() {
        return Factor::info(
            NAME,
            "no cpufreq: the frequency is fixed or set by firmware or the hypervisor",
        );
    }
    // Group CPUs by governor, in order of first appearance.
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for g in &sys.governors {
        match groups.iter_mut().find(|(name, _)| *name == g.governor) {
            Some((_, cpus)) => cpus.push(g.cpu),
            None => groups.push((&g.governor, vec![g.cpu])),
        }
    }
    let detail = groups
        .iter()
        .map(|(name, cpus)| format!("{name} on CPUs {}", format_cpu_list(cpus)))
        .collect::<Vec<_>>()
        .join(", ");
    if groups.iter().all(|(name, _)| *name == "performance") {
        Factor::good(NAME, detail)
    } else {
        Factor::warn(NAME, format!("{detail}: frequency changes add latency"))
            .fix("echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor (or cpupower frequency-set -g performance)")
    }
}

fn smt(sys: &SystemInfo) -> Factor {
    const NAME: &str = "SMT";
    match sys.smt_active {
        Some(true) => Factor::warn(NAME, "active: hyperthread siblings share execution units, so a sibling's work delays an RT thread",
        )
        .fix("echo off > /sys/devices/system/cpu/smt/control (or boot with nosmt)"),
        Some(false) => Factor::good(NAME, "not active"),
        None => Factor::info(NAME, "not supported or not reported"),
    }
}

fn isolation(sys: &SystemInfo) -> Factor {
    const NAME: &str = "CPU isolation";
    let mut parts = Vec::new();
    if let Some(cpus) = &sys.isolcpus {
        parts.push(format!("isolcpus {cpus}"));
    }
    if let Some(cpus) = &sys.nohz_full {
        parts.push(format!("nohz_full {cpus}"));
    }
    if let Some(cpus) = &sys.rcu_nocbs {
        parts.push(format!("rcu_nocbs {cpus}"));
    }
    if sys.isolcpus.is_some() || sys.nohz_full.is_some() {
        return Factor::good(NAME, parts.join(", "));
    }
    let online = sys
        .online_cpus
        .as_deref()
        .and_then(|l| parse_ranges(l).ok())
        .unwrap_or_else(|| (0..sys.cpu_count).collect());
    if online.len() < 2 {
        return Factor::info(NAME, "none (a single CPU cannot be isolated from the rest)");
    }
    // Suggest keeping the first CPU for housekeeping and isolating the rest.
    let measured = format_cpu_list(&online[1..]);
    Factor::info(
        NAME,
        "none: the scheduler, ticks and RCU callbacks may run on the measured CPUs",
    )
    .fix(format!(
        "boot with isolcpus={measured} nohz_full={measured} rcu_nocbs={measured} \
         (the CPUs to measure) and run with --cpus {measured}"
    ))
}

fn deep_idle_states(sys: &SystemInfo) -> Vec<String> {
    sys.idle_states
        .iter()
        .filter(|s| s.latency_us > DEEP_IDLE_US && !s.disabled)
        .map(|s| format!("{} ({} us)", s.name, s.latency_us))
        .collect()
}

fn idle_states(sys: &SystemInfo, perms: &Permissions) -> Factor {
    const NAME: &str = "idle states";
    let driver = sys.cpuidle_driver.as_deref().unwrap_or("none");
    let deep = deep_idle_states(sys);
    if deep.is_empty() {
        let detail = if sys.idle_states.is_empty() {
            format!("no cpuidle states (driver {driver})")
        } else {
            format!("no enabled state exits slower than {DEEP_IDLE_US} us (driver {driver})")
        };
        return Factor::good(NAME, detail);
    }
    let held = if perms.dma_latency.is_ok() {
        "; rtlat holds /dev/cpu_dma_latency=0 during runs by default, so they affect the application more than the measurement"
    } else {
        "; rtlat cannot hold /dev/cpu_dma_latency, so they affect the measurement too"
    };
    Factor::warn(NAME, format!("deep states enabled: {} (driver {driver}){held}", deep.join(", ")),
    )
    .fix(
        "hold /dev/cpu_dma_latency=0 in the application, or disable them: \
         echo 1 | tee /sys/devices/system/cpu/cpu*/cpuidle/stateN/disable (or boot with cpuidle.off=1)",
    )
}

fn dma_latency(sys: &SystemInfo, perms: &Permissions) -> Factor {
    const NAME: &str = "cpu_dma_latency";
    match &perms.dma_latency {
        Ok(()) => Factor::good(NAME, "writable: rtlat keeps CPUs out of deep idle states during runs",
        ),
        Err(e) if deep_idle_states(sys).is_empty() => Factor::info(NAME, format!("cannot open ({e}), but no deep idle states to avoid"),
        ),
        Err(e) => Factor::warn(NAME, format!("cannot open ({e}): deep idle states stay allowed during runs"),
        )
        .fix("run as root, or give your group write access: chgrp <group> /dev/cpu_dma_latency && chmod g+w /dev/cpu_dma_latency (a udev rule makes it permanent)"),
    }
}

fn clocksource(sys: &SystemInfo) -> Factor {
    const NAME: &str = "clocksource";
    let Some(cs) = sys.clocksource.as_deref() else {
        return Factor::info(NAME, "unknown");
    };
    let available = if sys.available_clocksources.is_empty() {
        String::new()
    } else {
        format!(" (available: {})", sys.available_clocksources.join(" "))
    };
    match cs {
        "tsc" | "arch_sys_counter" | "timebase" => {
            Factor::good(NAME, format!("{cs}: a fast, CPU-local counter{available}"))
        }
        "hpet" | "acpi_pm" | "jiffies" | "pit" => {
            let fix = if sys.available_clocksources.iter().any(|c| c == "tsc") {
                "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource \
                 (check dmesg for why the kernel distrusted the TSC first)"
                    .to_string()
            } else {
                let counter = match arch(sys) {
                    Arch::X86 => "a stable TSC",
                    Arch::Arm64 | Arch::Arm32 => "the ARM architected timer (arch_sys_counter)",
                    Arch::PowerPc => "the timebase",
                    Arch::Other => "a CPU-local counter",
                };
                format!(
                    "use hardware with {counter}; see dmesg for why the kernel chose this clocksource"
                )
            };
            Factor::warn(
                NAME,
                format!("{cs}: slow to read (every clock read is a device access){available}"),
            )
            .fix(fix)
        }
        "kvm-clock" | "hyperv_clocksource_tsc_page" | "xen" => {
            Factor::info(NAME, format!("{cs}: a paravirtual clock{available}"))
        }
        other => Factor::info(NAME, format!("{other}{available}")),
    }
}

fn rt_scheduling(perms: &Permissions) -> Factor {
    const NAME: &str = "RT scheduling";
    match (&perms.rt_fifo, perms.rtprio_limit) {
        (Err(e), _) => Factor::bad(NAME, format!("SCHED_FIFO refused: {e}"))
            .fix(PRIVILEGE_FIX),
        (Ok(()), Some(limit)) if limit < DEFAULT_PRIORITY => Factor::warn(NAME, format!(
            "SCHED_FIFO allowed up to priority {limit} only (RLIMIT_RTPRIO); the default is {DEFAULT_PRIORITY}"
        ),
        )
        .fix(format!(
            "use --priority {limit} or lower, or raise rtprio in /etc/security/limits.conf, or {PRIVILEGE_FIX}"
        )),
        (Ok(()), _) => Factor::good(NAME, "SCHED_FIFO permitted"),
    }
}

fn mlock(perms: &Permissions) -> Factor {
    const NAME: &str = "memory locking";
    const FIX: &str = "run as root, or: setcap cap_ipc_lock+ep $(command -v rtlat), \
                       or raise the limit (ulimit -l unlimited; memlock in /etc/security/limits.conf)";
    match (&perms.mlock, perms.memlock_limit) {
        (Err(e), _) => Factor::bad(NAME, format!("mlock refused: {e}")).fix(FIX),
        (Ok(()), Some(limit)) if limit < MEMLOCK_COMFORTABLE => Factor::warn(
            NAME,
            format!(
                "RLIMIT_MEMLOCK is {}: rtlat locks all its memory, thread stacks included, \
                 and mlockall may fail",
                bytes(limit)
            ),
        )
        .fix(FIX),
        (Ok(()), _) => Factor::good(NAME, "mlockall permitted"),
    }
}

fn virtualization(sys: &SystemInfo) -> Factor {
    const NAME: &str = "virtualization";
    match &sys.virtualization {
        None => Factor::good(NAME, "bare metal (no sign of a hypervisor)"),
        Some(hv) => Factor::warn(
            NAME,
            format!("running under {hv}: latencies include the hypervisor's"),
        )
        .fix("measure on bare metal for final numbers"),
    }
}

fn emulation(sys: &SystemInfo) -> Factor {
    const NAME: &str = "emulation";
    match &sys.emulation {
        None => Factor::good(NAME, "none: this binary runs on a CPU of its architecture"),
        Some(e) => Factor::warn(
            NAME,
            format!(
                "running under {e}: latencies are the emulator's and the host's scheduler's, \
                 and the other lines describe the host"
            ),
        )
        .fix("run this binary on the board itself for figures of its CPU"),
    }
}

fn timer_migration(sys: &SystemInfo) -> Factor {
    const NAME: &str = "timer migration";
    match sys.timer_migration {
        Some(true) => Factor::info(NAME, "on: timers of idle CPUs may be moved to busy ones")
            .fix("echo 0 > /proc/sys/kernel/timer_migration"),
        Some(false) => Factor::good(NAME, "off"),
        None => Factor::info(NAME, "not reported"),
    }
}

/// Which levels `timer --context` can measure on this kernel: the timerlat
/// tracer gives the IRQ handler and a kernel thread; `timerlat_fd` (Linux
/// 6.5) wakes rtlat's user threads by the same timer. A build without the
/// kernel's trace (the board build) measures only user space.
pub fn timer_contexts(caps: &Capabilities, sys: &SystemInfo) -> Factor {
    const NAME: &str = "timer contexts";
    if !crate::KERNEL_TRACE {
        return Factor::info(
            NAME,
            "user only in this build: timer --context and --split read the kernel's trace, which the board build leaves out (the kernel-trace feature)",
        );
    }
    let fix = format!(
        "boot a kernel with CONFIG_TIMERLAT_TRACER, e.g. a PREEMPT_RT kernel ({})",
        rt_kernel(sys)
    );
    let Some(root) = &caps.root else {
        return Factor::info(
            NAME,
            "unknown: tracefs is not mounted or not readable (run as root to see; `timer --context` mounts it)",
        );
    };
    let can = caps.contexts();
    let split = if caps.hrtimer_events {
        "; timer --split splits each user sample into its irq and scheduling parts (hrtimer events)"
    } else {
        "; no timer:hrtimer_* events, so no timer --split"
    };
    if can.is_empty() {
        return Factor::info(
            NAME,
            format!(
                "user only: no timerlat tracer in {}/available_tracers (CONFIG_TIMERLAT_TRACER), so no irq or thread{split}",
                root.display()
            ),
        )
        .fix(fix);
    }
    let detail = if caps.timerlat_fd {
        format!(
            "irq, thread, and user (timer --context {}: user through timerlat_fd, woken by the same timer): timerlat tracer{split}",
            can.join(",")
        )
    } else {
        format!(
            "irq, thread, and user (timer --context {} and plain timer): timerlat tracer; no timerlat_fd (Linux 6.5+) for user by the same timer{split}",
            can.join(",")
        )
    };
    Factor::good(NAME, detail)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_fixes, fixture, granted, refused, verdict};
    use super::*;
    use Verdict::*;

    /// Each named factor has its verdict.
    fn assert_verdicts(f: &[Factor], expected: &[(&str, Verdict)]) {
        for (name, v) in expected {
            assert_eq!(verdict(f, name), *v, "{name}");
        }
    }

    #[test]
    fn ppc_preempt_rt_board_is_mostly_good() {
        let f = assess(&fixture("ppc"), &granted());
        assert_fixes(&f);
        assert_verdicts(
            &f,
            &[
                ("preempt model", Good),
                ("RT throttling", Good),
                ("CPU governor", Info),
                ("SMT", Info),
                ("CPU isolation", Info),
                ("idle states", Good),
                ("cpu_dma_latency", Good),
                ("clocksource", Good),
                ("RT scheduling", Good),
                ("memory locking", Good),
                ("virtualization", Good),
                ("emulation", Good),
                ("timer migration", Info),
            ],
        );
        assert!(f
            .iter()
            .all(|x| !matches!(x.verdict, Verdict::Warn | Verdict::Bad)));
    }

    #[test]
    fn x86_virtualised_guest_has_warnings() {
        let f = assess(&fixture("x86_64"), &granted());
        assert_fixes(&f);
        assert_verdicts(
            &f,
            &[
                ("preempt model", Bad),
                ("RT throttling", Warn),
                ("CPU governor", Info),
                ("SMT", Good),
                ("CPU isolation", Info),
                ("clocksource", Info),
                ("virtualization", Warn),
                ("timer migration", Info),
            ],
        );
        let iso = f.iter().find(|x| x.name == "CPU isolation").unwrap();
        assert!(iso.fix.as_deref().unwrap().contains("isolcpus=1-3"));
        assert!(iso.fix.as_deref().unwrap().contains("rcu_nocbs=1-3"));
    }

    #[test]
    fn other_fixtures() {
        let f = assess(&fixture("aarch64"), &granted());
        assert_fixes(&f);
        assert_verdicts(
            &f,
            &[
                ("preempt model", Warn),
                ("CPU governor", Warn),
                ("clocksource", Good),
            ],
        );

        let f = assess(&fixture("armv7"), &granted());
        assert_fixes(&f);
        assert_verdicts(
            &f,
            &[
                ("preempt model", Good),
                ("CPU governor", Good),
                ("CPU isolation", Good),
                ("idle states", Warn),
                ("clocksource", Info),
                ("timer migration", Good),
            ],
        );
    }

    #[test]
    fn refused_permissions() {
        let f = assess(&fixture("armv7"), &refused());
        assert_fixes(&f);
        assert_verdicts(
            &f,
            &[
                ("RT scheduling", Bad),
                ("memory locking", Bad),
                ("cpu_dma_latency", Warn),
            ],
        );
        let rt = f.iter().find(|x| x.name == "RT scheduling").unwrap();
        assert!(rt.fix.as_deref().unwrap().contains("setcap"));

        // No deep idle states: an unopenable device matters little.
        let f = assess(&fixture("ppc"), &refused());
        assert_fixes(&f);
        assert_eq!(verdict(&f, "cpu_dma_latency"), Verdict::Info);

        let limited = Permissions {
            rtprio_limit: Some(50),
            memlock_limit: Some(64 << 10),
            ..granted()
        };
        let f = assess(&fixture("ppc"), &limited);
        assert_fixes(&f);
        assert_verdicts(&f, &[("RT scheduling", Warn), ("memory locking", Warn)]);
        let m = f.iter().find(|x| x.name == "memory locking").unwrap();
        assert!(m.detail.contains("64 KiB"), "{}", m.detail);
    }

    /// A captured tracefs: `available_tracers`, and `timerlat_fd` if `fd`.
    fn tracefs(tracers: &str, fd: bool) -> (tempfile::TempDir, Capabilities) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("available_tracers"), tracers).unwrap();
        if fd {
            let cpu0 = dir.path().join("osnoise/per_cpu/cpu0");
            std::fs::create_dir_all(&cpu0).unwrap();
            std::fs::write(cpu0.join("timerlat_fd"), "").unwrap();
        }
        let caps = Capabilities::of(dir.path());
        (dir, caps)
    }

    #[test]
    fn timer_contexts_follow_the_tracers() {
        if !crate::KERNEL_TRACE {
            // The board build measures user space only, whatever the kernel.
            let (_d, rt612) = tracefs("timerlat osnoise nop\n", true);
            let f = timer_contexts(&rt612, &fixture("x86_64"));
            assert!(
                f.detail.starts_with("user only in this build"),
                "{}",
                f.detail
            );
            return;
        }
        // Debian 12's generic 6.1: no timerlat tracer.
        let (_d, generic) = tracefs("blk function_graph function nop\n", false);
        let f = timer_contexts(&generic, &fixture("x86_64"));
        assert_eq!(f.verdict, Info);
        assert!(f.detail.starts_with("user only"), "{}", f.detail);
        assert!(f.detail.contains("CONFIG_TIMERLAT_TRACER"), "{}", f.detail);
        assert!(f.fix.as_deref().unwrap().contains("PREEMPT_RT"));
        assert!(f.detail.contains("no timer --split"), "{}", f.detail);
        // With the hrtimer events (every distribution kernel): --split.
        for e in ["hrtimer_start", "hrtimer_expire_entry"] {
            let d = _d.path().join("events/timer").join(e);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("enable"), "0").unwrap();
        }
        let f = timer_contexts(&Capabilities::of(_d.path()), &fixture("x86_64"));
        assert!(f.detail.contains("timer --split splits"), "{}", f.detail);
        // Its PREEMPT_RT 6.1: timerlat, no timerlat_fd.
        let (_d, rt61) = tracefs("timerlat osnoise hwlat blk function nop\n", false);
        let f = timer_contexts(&rt61, &fixture("x86_64"));
        assert_eq!(f.verdict, Good);
        assert!(
            f.detail.starts_with("irq, thread, and user"),
            "{}",
            f.detail
        );
        assert!(f.detail.contains("no timerlat_fd"), "{}", f.detail);
        // 6.12 PREEMPT_RT: timerlat_fd too, so user by the same timer.
        let (_d, rt612) = tracefs("timerlat osnoise nop\n", true);
        let f = timer_contexts(&rt612, &fixture("x86_64"));
        assert_eq!(f.verdict, Good);
        assert!(
            f.detail
                .starts_with("irq, thread, and user (timer --context irq,thread,user:"),
            "{}",
            f.detail
        );
        // A name that merely contains "timerlat" is not the tracer.
        let (_d, odd) = tracefs("timerlat_x nop\n", false);
        assert_eq!(timer_contexts(&odd, &fixture("x86_64")).verdict, Info);
        // No tracefs to read.
        let f = timer_contexts(&Capabilities::default(), &fixture("x86_64"));
        assert_eq!(f.verdict, Info);
        assert!(f.detail.starts_with("unknown"), "{}", f.detail);
    }

    /// Every fix names what exists on the machine's architecture: no x86
    /// kernel package or TSC on ARM and PowerPC, no ARM one on x86.
    #[test]
    fn the_hints_fit_the_architecture() {
        let slow_clock = |name: &str, cs: &str| {
            let mut s = fixture(name);
            s.preempt_model = "VOLUNTARY".into();
            s.clocksource = Some(cs.into());
            s.available_clocksources = vec![cs.into()];
            s
        };
        let (_d, generic) = {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("available_tracers"), "nop\n").unwrap();
            let caps = Capabilities::of(dir.path());
            (dir, caps)
        };
        let fixes = |sys: &SystemInfo| {
            let mut f = assess(sys, &granted());
            f.push(timer_contexts(&generic, sys));
            f.iter()
                .filter_map(|x| x.fix.clone())
                .collect::<Vec<_>>()
                .join("\n")
        };
        for (name, cs, want, never) in [
            (
                "x86_64",
                "hpet",
                "linux-image-rt-amd64",
                &["arm64", "armmp", "architected", "timebase"][..],
            ),
            (
                "aarch64",
                "jiffies",
                "linux-image-rt-arm64",
                &["amd64", "TSC", "tsc", "armmp"][..],
            ),
            (
                "armv7",
                "jiffies",
                "linux-image-rt-armmp",
                &["amd64", "TSC", "tsc", "arm64"][..],
            ),
            (
                "ppc",
                "jiffies",
                "no distribution ships one for 32-bit PowerPC",
                &["amd64", "TSC", "tsc", "arm64", "armmp"][..],
            ),
        ] {
            let text = fixes(&slow_clock(name, cs));
            assert!(text.contains(want), "{name}: {text}");
            for n in never {
                assert!(!text.contains(n), "{name}: {n} in {text}");
            }
        }
        // The kernel responder's hint fits the build: the board build has
        // no kmod/ beside it to add to DKMS.
        let absent = super::super::responder::factor(&super::super::responder::Found::Absent);
        let hint = absent.fix.unwrap_or_default();
        assert_eq!(
            hint.contains("dkms add kmod"),
            cfg!(feature = "host-tools"),
            "{hint}"
        );
    }

    #[test]
    fn emulation_is_named_with_its_evidence() {
        let mut sys = fixture("armv7");
        let f = assess(&sys, &granted());
        assert_eq!(verdict(&f, "emulation"), Good);
        sys.emulation = Some("qemu-user (binfmt_misc qemu-arm: /usr/bin/qemu-arm): a binary for arm on a kernel for x86_64".into());
        let f = assess(&sys, &granted());
        assert_fixes(&f);
        let e = f.iter().find(|x| x.name == "emulation").unwrap();
        assert_eq!(e.verdict, Warn);
        assert!(
            e.detail.contains("qemu-user (binfmt_misc qemu-arm"),
            "{}",
            e.detail
        );
        assert!(e.detail.contains("describe the host"), "{}", e.detail);
    }

    #[test]
    fn empty_system_still_yields_every_factor() {
        let f = assess(&SystemInfo::default(), &granted());
        assert_eq!(f.len(), 13);
        assert_fixes(&f);
        assert_eq!(verdict(&f, "preempt model"), Verdict::Warn);
    }
}
