//! A result written by another architecture loads here: scripts/cross.sh runs
//! the 32-bit big-endian PowerPC build under qemu-ppc-static and names its
//! result file in `RTLAT_FOREIGN_RESULT` (and `RTLAT_FOREIGN_MACHINE=ppc`).

use crate::util::*;
use rtlat::result::RunResult;

case!(
    a_result_from_a_big_endian_32_bit_build_loads,
    [File("RTLAT_FOREIGN_RESULT", "scripts/cross.sh build")],
    |_t| {
        let path = std::env::var_os("RTLAT_FOREIGN_RESULT").expect("set");
        let path = std::path::PathBuf::from(path);
        let r = RunResult::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.complete, "the PowerPC run did not finish");
        assert_eq!(r.benchmark, "timer");
        let v = load(&path);
        if let Ok(machine) = std::env::var("RTLAT_FOREIGN_MACHINE") {
            assert_eq!(
                v["system"]["machine"],
                machine.as_str(),
                "written elsewhere"
            );
        }
        assert_schema_valid(&path);
        // Nothing is lost or altered by reading: what this build writes back is what the other wrote.
        let again = serde_json::to_value(&r).expect("serialize");
        assert_eq!(again, v, "reading the file changed it");
        // The numbers are numbers (a byte-swapped or truncated counter would break these).
        assert_summary_invariants(&v["total"]);
        let periods_in_run = r.config["duration_ns"].as_u64().expect("duration")
            / r.config["period_ns"].as_u64().expect("period");
        for t in v["threads"].as_array().expect("threads") {
            assert_summary_invariants(&t["summary"]);
            assert_thread_consistent(t);
            let s = &t["summary"];
            let periods = s["samples"].as_u64().expect("n") + s["overruns"].as_u64().expect("o");
            assert!(
                periods.abs_diff(periods_in_run) <= 3,
                "{periods} periods, expected {periods_in_run}: {s}"
            );
        }
    }
);
