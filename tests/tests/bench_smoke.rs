//! The benchmark `tests/bench/ratios.sh` is not a test (its figures are printed, never asserted),
//! but its `--quick` mode runs every step in seconds against the binaries this run built, so CI
//! keeps the script working: it must exit 0 and print the table with every row.

use std::path::Path;
use std::process::Command;

use memsync_e2e::bin_path;

/// The first words of each row of the table, in order.
const ROWS: [&str; 10] = [
    "| no-change pulls/s",
    "| changed pulls/s",
    "| single-file pushes/s",
    "| export lag p99",
    "| push → long-poll wake",
    "| first pull of",
    "| `memsync push` of one file",
    "| no-change `memsync pull`",
    "| no-change pull p99,",
    "| server resident memory",
];

#[test]
fn ratios_quick_runs_every_step_and_prints_the_table() {
    let server = bin_path("memsync-server");
    let bin_dir = server.parent().expect("the binaries' directory");
    for b in ["memsync", "memsync-load"] {
        bin_path(b);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/ratios.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("--quick")
        .arg("--bin-dir")
        .arg(bin_dir)
        .env_remove("DURATION")
        .env_remove("CONNS")
        .output()
        .expect("bash runs tests/bench/ratios.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ratios.sh --quick failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    println!("{stdout}");
    let header = "| measure | memsync | ceiling/alternative | ratio | target |";
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != header)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        table.len() == ROWS.len() + 2,
        "expected the header, the rule and {} rows; got:\n{}\n--- stderr\n{stderr}",
        ROWS.len(),
        table.join("\n")
    );
    for (line, row) in table[2..].iter().zip(ROWS) {
        assert!(
            line.starts_with(row),
            "row `{line}` should start with `{row}`"
        );
        assert_eq!(
            line.matches('|').count(),
            6,
            "row `{line}` should have five cells"
        );
    }
}
