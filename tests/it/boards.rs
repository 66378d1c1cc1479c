//! Boards told apart in `compare`, `report` and `compare --by-board`:
//! results of boards that share a host name (embedded boards often do),
//! made of a real result file.

use crate::report::{run_in, stdout};
use crate::util::assert_exit;
use serde_json::{json, Value};
use std::path::Path;

/// The real v1 timer result with the machine's names replaced.
fn result_of(host: &str, arch: &str, model: Option<&str>) -> Value {
    let text = include_str!("../fixtures/results/v1-timer.json");
    let mut r: Value = serde_json::from_str(text).expect("fixture");
    r["system"]["hostname"] = json!(host);
    r["system"]["machine"] = json!(arch);
    r["system"]["device_tree_model"] = json!(model);
    r
}

/// An armv7 board, a PowerPC board and a PC, all called `vm`.
const THREE: [(&str, &str, Option<&str>); 3] = [
    ("arm.json", "armv7l", Some("TI AM335x BeagleBone Black")),
    ("ppc.json", "ppc", Some("MPC8315E RDB")),
    ("pc.json", "x86_64", None),
];

fn write_three(dir: &Path) {
    for (file, arch, model) in THREE {
        std::fs::write(dir.join(file), result_of("vm", arch, model).to_string()).unwrap();
    }
}

case!(compare_tells_apart_boards_that_share_a_host_name, [], |t| {
    write_three(t.dir());
    let files = ["arm.json", "ppc.json", "pc.json"];
    let out = run_in(t.dir(), &[&["compare"], &files[..]].concat());
    assert_exit(&out, 0, "out");
    let text = stdout(&out);
    let header = text
        .lines()
        .find(|l| l.starts_with("label"))
        .expect("header");
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(cols[..4], ["label", "arch", "board", "load"], "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("vm ")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    for (row, (_, arch, _)) in rows.iter().zip(THREE) {
        let label = format!("vm {arch} 6.18.44-fc-v657");
        assert!(row.starts_with(&format!("{label} ")), "{row}");
        assert!(row.contains(&format!(" {arch} ")), "{row}");
    }
    let csv = stdout(&run_in(
        t.dir(),
        &[&["compare", "--format", "csv"], &files[..]].concat(),
    ));
    let head = csv.lines().next().unwrap();
    assert!(
        head.starts_with("label,benchmark,arch,board,load,"),
        "{csv}"
    );
    assert!(
        csv.contains("\nvm ppc 6.18.44-fc-v657,timer,ppc,MPC8315E RDB,"),
        "{csv}"
    );
    // The SVG legends and the HTML report's contents name each board.
    let out = run_in(
        t.dir(),
        &[&["compare", "--svg", "c.svg"], &files[..]].concat(),
    );
    assert_exit(&out, 0, "out");
    let svg = std::fs::read_to_string(t.path("c.svg")).unwrap();
    let out = run_in(
        t.dir(),
        &[&["report", "--quiet", "--html", "r.html"], &files[..]].concat(),
    );
    assert_exit(&out, 0, "out");
    let html = std::fs::read_to_string(t.path("r.html")).unwrap();
    for (_, arch, _) in THREE {
        assert!(svg.contains(&format!(">vm {arch} 6.18")), "{arch}");
        assert!(
            html.contains(&format!("vm {arch} 6.18.44-fc-v657")),
            "{arch}"
        );
    }
    // Labels given are kept as they are.
    let mut r = result_of("vm", "ppc", None);
    r["label"] = json!("board-p");
    std::fs::write(t.path("ppc.json"), r.to_string()).unwrap();
    let text = stdout(&run_in(t.dir(), &[&["compare"], &files[..]].concat()));
    assert!(text.lines().any(|l| l.starts_with("board-p ")), "{text}");
});

/// A suite directory `dir` of one done timer step, its manifest naming
/// the board `board` (an ssh target) and its result made on `host`.
fn suite_dir(dir: &Path, board: &str, host: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let m = json!({
        "schema": "rtlat-suite", "schema_version": 1,
        "tool": {"name": "rtlat", "version": env!("CARGO_PKG_VERSION")},
        "suite": "quick", "board": board,
        "steps": [{"name": "timer", "bench": "timer", "duration": "2s",
                   "file": "timer.json", "command": ["rtlat", "timer"], "state": "done"}]
    });
    std::fs::write(dir.join("suite.json"), m.to_string()).unwrap();
    let r = result_of(host, "x86_64", None);
    std::fs::write(dir.join("timer.json"), r.to_string()).unwrap();
}

case!(by_board_rows_are_named_by_the_boards_host_names, [], |t| {
    let boards = t.path("boards");
    suite_dir(
        &boards.join("root@127.0.0.1_2202"),
        "root@127.0.0.1_2202",
        "board-a",
    );
    suite_dir(
        &boards.join("root@127.0.0.1_2203"),
        "root@127.0.0.1_2203",
        "board-b",
    );
    let by_board = |dirs: &[&str]| {
        let out = run_in(
            t.dir(),
            &[&["compare", "--by-board", "--format", "csv"], dirs].concat(),
        );
        assert_exit(&out, 0, "out");
        stdout(&out)
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(by_board(&["boards"]), ["board-a", "board-b"]);
    // Two suites of one machine: told apart by their directories.
    suite_dir(&t.path("suite1"), "vm", "vm");
    suite_dir(&t.path("suite2"), "vm", "vm");
    assert_eq!(
        by_board(&["suite1", "suite2"]),
        ["vm [suite1]", "vm [suite2]"]
    );
});
