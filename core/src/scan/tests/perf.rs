//! `cargo test --release -p memsync-core scan::tests::perf -- --ignored --nocapture`: where the
//! time goes, detector by detector (the criterion bench gives the totals).

use std::time::Instant;

use super::*;

#[test]
#[ignore = "timing report, run by hand in release mode"]
fn perf() {
    let text = std::env::var("SCAN_PERF_CORPUS").map_or_else(
        |_| super::corpus::typical_markdown(1 << 20),
        |which| match which.as_str() {
            "cjk" => super::corpus::cjk_notes(1 << 20),
            "dense" => super::corpus::secret_dense(1 << 20),
            "adversarial" => super::corpus::adversarial(100 * 1024),
            _ => super::corpus::typical_markdown(1 << 20),
        },
    );
    let s = scanner();
    let mb = text.len() as f64 / 1e6;
    let time = |name: &str, f: &dyn Fn()| {
        f();
        let mut secs = f64::MAX;
        for _ in 0..15 {
            let t = Instant::now();
            f();
            secs = secs.min(t.elapsed().as_secs_f64());
        }
        println!("{name:32} {:8.2} ms  {:8.1} MB/s", secs * 1e3, mb / secs);
    };
    time("full scan", &|| {
        s.scan(&text);
    });
    time("special_chars", &|| {
        std::hint::black_box(crate::scan::unicode::special_chars(std::hint::black_box(
            &text,
        )));
    });
    let engine = &s.engine;
    time("prefilter only", &|| {
        std::hint::black_box(engine.count_hits(&text));
    });
    time("engine.scan", &|| {
        let mut out = Vec::new();
        engine.scan(&text, std::slice::from_ref(&(0..text.len())), &mut out);
        std::hint::black_box(out);
    });
    time("unicode::analyze", &|| {
        std::hint::black_box(crate::scan::unicode::analyze(&text).is_some());
    });
    time("analyze + normalize", &|| {
        if let Some(r) = crate::scan::unicode::analyze(&text) {
            std::hint::black_box(
                crate::scan::unicode::normalize(&text, &r.changed_lines, 4).is_some(),
            );
        }
    });
    engine.report(&text);
}

/// A fixed amount of work for `perf stat -e cycles:u` (load-independent): 50 scans of 1 MiB.
#[test]
#[ignore = "run by hand under perf stat"]
fn perf_loop() {
    let text = super::corpus::typical_markdown(1 << 20);
    let s = scanner();
    for _ in 0..50 {
        std::hint::black_box(s.scan(std::hint::black_box(&text)));
    }
}

/// `SCAN_FILES=a.md:b.md cargo test -p memsync-core scan::tests::perf::scan_files -- --ignored
/// --nocapture`: print the findings for files, to review rules against real notes.
#[test]
#[ignore = "run by hand on files"]
fn scan_files() {
    let Ok(files) = std::env::var("SCAN_FILES") else {
        return;
    };
    for path in files.split(':') {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for f in scan(&text) {
            let line = text.lines().nth(f.line as usize - 1).unwrap_or("");
            println!(
                "{path}:{}:{} {} {:?}  | {}",
                f.line,
                f.column,
                f.rule,
                f.preview,
                line.chars().take(110).collect::<String>()
            );
        }
    }
}
