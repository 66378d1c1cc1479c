//! contrib/lava/: the test definition and the example job pass LAVA's own
//! schema (Debian's lava-common), and the definition's steps, run with LAVA's
//! real test-shell helpers (Debian's lava-dispatcher), signal every figure of
//! the result file as a test case. scripts/lava-e2e.sh runs the example job
//! itself with LAVA's dispatcher.

use crate::util::{self, need, Need};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The system Python with Debian's python3-yaml and lava-common (not a
/// virtual environment's Python that may come first on PATH).
const PYTHON: &str = "/usr/bin/python3";

fn contrib(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("contrib/lava")
        .join(file)
}

const VALIDATE: &str = r#"
import sys, yaml
from lava_common.schemas import validate
from lava_common.schemas.test.testdef import validate as validate_testdef
definition = yaml.safe_load(open(sys.argv[1]))
job = yaml.safe_load(open(sys.argv[2]))
validate_testdef(definition)
validate(job, strict=True)
# The definition once more, strictly: inlined in the job's test action.
inline = dict(job)
inline["actions"] = [
    a if "test" not in a else {"test": dict(a["test"], definitions=[
        {"repository": definition, "from": "inline", "path": "inline/rtlat.yaml", "name": "rtlat"}])}
    for a in job["actions"]]
validate(inline, strict=True)
print("valid")
"#;

fn validate(definition: &Path, job: &Path) -> std::process::Output {
    Command::new(PYTHON)
        .args(["-c", VALIDATE])
        .arg(definition)
        .arg(job)
        .output()
        .unwrap()
}

/// Whether the Python that runs the checks can import `modules`.
fn python_has(modules: &str) -> bool {
    Command::new(PYTHON)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

case!(
    definition_and_job_pass_lavas_schema,
    [Provided(
        python_has("lava_common.schemas, yaml"),
        "lava-common (lava_common.schemas)"
    )],
    |t| {
        let out = validate(&contrib("rtlat.yaml"), &contrib("qemu-job.yaml"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "valid");
        // The validator does refuse: a wrong format line, an unknown job key.
        let text = std::fs::read_to_string(contrib("rtlat.yaml")).unwrap();
        let bad_def = t.path("def.yaml");
        std::fs::write(
            &bad_def,
            text.replace("Test Definition 1.0", "Test Definition 2.0"),
        )
        .unwrap();
        assert!(!validate(&bad_def, &contrib("qemu-job.yaml"))
            .status
            .success());
        let job = std::fs::read_to_string(contrib("qemu-job.yaml")).unwrap();
        let bad_job = t.path("job.yaml");
        std::fs::write(
            &bad_job,
            job.replace("priority: medium", "priority: medium\nbogus: 1"),
        )
        .unwrap();
        assert!(!validate(&contrib("rtlat.yaml"), &bad_job).status.success());
    }
);

/// LAVA's test-shell helpers from Debian's lava-dispatcher package: the
/// installed one (scripts/packages.txt), else unpacked once (apt-get
/// download + dpkg-deb -x) under the target directory.
fn lava_helpers() -> Option<PathBuf> {
    let installed = Path::new("/usr/lib/python3/dist-packages/lava_dispatcher/lava_test_shell");
    if installed.join("lava-test-case").exists() {
        return Some(installed.to_path_buf());
    }
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lava-dispatcher");
    let shell = cache.join("x/usr/lib/python3/dist-packages/lava_dispatcher/lava_test_shell");
    if !shell.join("lava-test-case").exists() {
        std::fs::create_dir_all(&cache).ok()?;
        let got = Command::new("apt-get")
            .args(["download", "-q", "lava-dispatcher"])
            .current_dir(&cache)
            .output()
            .ok()?;
        if !got.status.success() {
            eprintln!(
                "apt-get download lava-dispatcher: {}",
                String::from_utf8_lossy(&got.stderr)
            );
            return None;
        }
        let deb = std::fs::read_dir(&cache)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "deb"))?;
        let x = Command::new("dpkg-deb")
            .arg("-x")
            .arg(&deb)
            .arg(cache.join("x"))
            .status()
            .ok()?;
        if !x.success() {
            return None;
        }
    }
    Some(shell)
}

/// The YAML file as JSON (through the system Python's yaml).
fn yaml(path: &Path) -> Value {
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import sys, yaml, json; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// µs with three decimals, as the cases carry them.
fn us(ns: &Value) -> String {
    let ns = ns.as_u64().unwrap();
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Every case the result should give: name → (result, measurement).
fn expected_cases(r: &Value) -> Vec<(String, String, Option<String>)> {
    let budget = r["thresholds"]["max_latency_ns"].as_u64();
    let mut cases = vec![("timer-run".to_string(), "pass".to_string(), None)];
    let mut series: Vec<(String, &Value)> = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), &t["summary"]))
        .collect();
    series.push(("all".into(), &r["total"]));
    for (name, s) in series {
        let p = format!("timer-{name}");
        cases.push((format!("{p}-min"), "pass".into(), Some(us(&s["min_ns"]))));
        cases.push((format!("{p}-avg"), "pass".into(), Some(us(&s["avg_ns"]))));
        for pc in s["percentiles"].as_array().unwrap() {
            let label = format!("{p}-p{}", pc["p"].as_f64().unwrap());
            cases.push((label, "pass".into(), Some(us(&pc["ns"]))));
        }
        let max = s["max_ns"].as_u64().unwrap();
        let verdict = if budget.is_some_and(|b| max > b) {
            "fail"
        } else {
            "pass"
        };
        cases.push((format!("{p}-max"), verdict.into(), Some(us(&s["max_ns"]))));
    }
    cases
}

case!(
    the_definitions_steps_signal_every_figure_through_lavas_helpers,
    [Provided(python_has("yaml"), "python3-yaml")],
    |t| {
        let helpers = lava_helpers();
        if !need(Need::Provided(
            helpers.is_some(),
            "lava-dispatcher (apt-get download)",
        )) {
            return;
        }
        let helpers = helpers.unwrap();
        // The helpers as the dispatcher installs them: an interpreter line each.
        let bin = t.path("bin");
        std::fs::create_dir(&bin).unwrap();
        for f in [
            "lava-test-case",
            "lava-common-functions",
            "lava-test-raise",
            "lava-test-set",
        ] {
            let body = std::fs::read_to_string(helpers.join(f)).unwrap();
            let dest = bin.join(f);
            std::fs::write(&dest, format!("#!/bin/sh\n{body}")).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // run.sh as LAVA's dispatcher writes it: the definition's params, then
        // the job's, `set -e`, the steps. A synthetic timer run (deterministic:
        // 2..5 µs) with a 4 µs budget has failing and passing cases.
        let def = yaml(&contrib("rtlat.yaml"));
        let result_file = t.path("result.json");
        let mut script = String::from("###default parameters from test definition###\n");
        for (k, v) in def["params"].as_object().unwrap() {
            script.push_str(&format!("{k}='{}'\n", v.as_str().unwrap_or_default()));
        }
        script.push_str("###test parameters from job submission###\n");
        for (k, v) in [
            ("DURATION", "2s".to_string()),
            ("MAX_LATENCY", "4us".into()),
            ("ARGS", "--synthetic 1 --cpus 0".into()),
            ("RESULT_FILE", result_file.display().to_string()),
        ] {
            script.push_str(&format!("{k}='{v}'\n"));
        }
        script.push_str("set -e\n");
        for step in def["run"]["steps"].as_array().unwrap() {
            script.push_str(step.as_str().unwrap());
            script.push('\n');
        }
        script.push_str("echo '<LAVA_SIGNAL_ENDRUN 0_rtlat uuid>'\n");
        let run_sh = t.path("run.sh");
        std::fs::write(&run_sh, script).unwrap();
        let rtlat_dir = util::bin().parent().unwrap().to_path_buf();
        let results = t.path("lava-results");
        let out = Command::new("sh")
            .arg(&run_sh)
            .env(
                "PATH",
                format!(
                    "{}:{}:/usr/sbin:/usr/bin:/sbin:/bin",
                    bin.display(),
                    rtlat_dir.display()
                ),
            )
            .env("LAVA_RESULT_DIR", &results)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("<LAVA_SIGNAL_ENDRUN"),
            "the steps failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );

        let result = util::load(&result_file);
        let want = expected_cases(&result);
        let got: Vec<(String, String, Option<String>)> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("<LAVA_SIGNAL_TESTCASE ")?.strip_suffix('>'))
            .map(|fields| {
                let get = |k: &str| {
                    fields
                        .split(' ')
                        .find_map(|f| f.strip_prefix(&format!("{k}=")).map(str::to_string))
                };
                let units = get("UNITS");
                let m = get("MEASUREMENT");
                assert!(m.is_none() || units.as_deref() == Some("us"), "{fields}");
                (get("TEST_CASE_ID").unwrap(), get("RESULT").unwrap(), m)
            })
            .collect();
        assert_eq!(got, want);
        assert!(
            got.iter().any(|c| c.1 == "fail"),
            "the 4 µs budget failed no case"
        );
        // lava-test-case also left its per-case files, as LAVA collects them.
        let max = std::fs::read_to_string(results.join("results/timer-all-max/result")).unwrap();
        assert_eq!(max.trim(), "fail");
    }
);
