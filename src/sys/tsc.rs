//! The CPU's time-stamp counter (x86_64 `rdtsc`): the cheapest clock read a
//! busy loop can make, as oslat reads it. Elsewhere there is none and
//! [`read`] is never called ([`available`] says so).

/// Whether this machine has a counter that ticks at a constant rate in every
/// CPU state and on every CPU (x86_64 with `constant_tsc` and `nonstop_tsc`).
pub fn available() -> bool {
    cfg!(target_arch = "x86_64") && flags_say_invariant(&cpu_flags())
}

/// The `flags` line of the first CPU in `/proc/cpuinfo` (empty if unreadable).
fn cpu_flags() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("flags"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default()
}

fn flags_say_invariant(line: &str) -> bool {
    let flags: Vec<&str> = line
        .split_once(':')
        .map(|(_, f)| f.split_whitespace().collect())
        .unwrap_or_default();
    flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
}

/// The counter now (0 where there is none).
#[inline(always)]
pub fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc reads a register; it has no memory effects and every x86_64 CPU has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invariant_counter_needs_both_flags() {
        assert!(flags_say_invariant(
            "flags\t: fpu tsc constant_tsc nonstop_tsc rdtscp"
        ));
        assert!(!flags_say_invariant("flags\t: fpu tsc constant_tsc"));
        assert!(!flags_say_invariant(""));
    }

    #[test]
    fn the_counter_moves_forward_where_there_is_one() {
        if available() {
            let a = read();
            let b = read();
            assert!(b >= a);
        }
    }
}
