//! `memsync-scan-bench`: memsync's secret scanner side by side with the leading open-source
//! scanners, on the labeled corpus of `memsync_e2e::corpus`.
//!
//! It writes the corpus (`DIR/notes/*.md` and `DIR/labels.json`; a temporary directory unless
//! `--dir`), runs memsync's scanner in-process on every note (single thread, best of 3), then each
//! selected peer that is installed (looked up on `PATH` and `--extra-path`; skipped with a note
//! otherwise) on `DIR/notes`, bounded by `--timeout-secs`:
//!
//! - Kingfisher: `kingfisher scan NOTES --no-validate --no-update-check --no-dedup --format json -o OUT`
//! - CredSweeper: `credsweeper --path NOTES --save-json OUT`
//! - detect-secrets: `detect-secrets scan --all-files NOTES`
//! - ripsecrets: `ripsecrets NOTES` (`path:line:text` lines)
//! - secretlint: `secretlint "NOTES/**/*" --secretlintrc CFG --format json` with
//!   `@secretlint/secretlint-rule-preset-recommend`
//!
//! Findings are scored at file + line granularity against the **secret** labels: recall = labeled
//! lines found / labeled lines, precision = reported lines that are labeled / reported lines
//! (distinct file+line pairs). A finding anywhere inside a labeled private-key block counts for the
//! block's `-----BEGIN` line. For memsync only `secret` findings enter this table; its injection
//! recall and precision are printed separately (the peers do not look for injections). MB/s is
//! the corpus size over the wall time of one run of the tool (best of `--runs`), process start-up
//! included for the peers.
//!
//! The program prints numbers, file names and line numbers only, never a finding's text.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use memsync_e2e::corpus::{self, CorpusFile};
use serde_json::Value;

#[derive(Parser, Debug)]
#[command(
    name = "memsync-scan-bench",
    about = "Recall, precision and MB/s of memsync's secret scanner and its peers on the labeled corpus"
)]
struct Args {
    /// Corpus seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Files generated per family.
    #[arg(long, default_value_t = 4)]
    files_per_family: usize,
    /// Write the corpus here (kept) instead of a temporary directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Tools to run, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "memsync,kingfisher,credsweeper,detect-secrets,ripsecrets,secretlint"
    )]
    tools: Vec<Tool>,
    /// Wall-time limit of one peer run.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
    /// Runs per peer; the fastest counts (the first often fills caches).
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// Extra directories searched for the peers' executables (before PATH).
    #[arg(long)]
    extra_path: Vec<PathBuf>,
    /// Also print each tool's misses and false positives by family.
    #[arg(long)]
    details: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
enum Tool {
    Memsync,
    Kingfisher,
    Credsweeper,
    DetectSecrets,
    Ripsecrets,
    Secretlint,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Memsync => "memsync",
            Tool::Kingfisher => "kingfisher",
            Tool::Credsweeper => "credsweeper",
            Tool::DetectSecrets => "detect-secrets",
            Tool::Ripsecrets => "ripsecrets",
            Tool::Secretlint => "secretlint",
        }
    }
}

/// A reported or labeled location: file name (relative to `notes/`) and 1-based line.
type Loc = (String, u32);

/// What the labels say, plus the mapping of key-block lines to their `BEGIN` line.
struct Truth {
    secret: BTreeSet<Loc>,
    injection: BTreeSet<Loc>,
    family_of_label: HashMap<Loc, &'static str>,
    family_of_file: HashMap<String, &'static str>,
    canonical: HashMap<Loc, u32>,
}

impl Truth {
    fn new(files: &[CorpusFile]) -> Truth {
        let mut t = Truth {
            secret: BTreeSet::new(),
            injection: BTreeSet::new(),
            family_of_label: HashMap::new(),
            family_of_file: HashMap::new(),
            canonical: HashMap::new(),
        };
        for f in files {
            t.family_of_file.insert(f.name.clone(), f.family);
            let lines: Vec<&str> = f.text.lines().collect();
            for e in &f.expected {
                let loc = (f.name.clone(), e.line);
                t.family_of_label.insert(loc.clone(), e.family);
                if e.category == "secret" {
                    t.secret.insert(loc);
                    let begin = lines.get(e.line as usize - 1).copied().unwrap_or("");
                    if begin.contains("-----BEGIN")
                        && begin.contains("PRIVATE KEY")
                        && !begin.contains("\\n")
                    {
                        for (i, l) in lines.iter().enumerate().skip(e.line as usize) {
                            t.canonical.insert((f.name.clone(), i as u32 + 1), e.line);
                            if l.contains("-----END") {
                                break;
                            }
                        }
                    }
                } else {
                    t.injection.insert(loc);
                }
            }
        }
        t
    }

    /// Maps a reported location to the one that is scored; `None` for files outside the corpus.
    fn canon(&self, path: &str, line: u32) -> Option<Loc> {
        let name = Path::new(path).file_name()?.to_str()?.to_owned();
        if !self.family_of_file.contains_key(&name) {
            return None;
        }
        let line = self
            .canonical
            .get(&(name.clone(), line))
            .copied()
            .unwrap_or(line);
        Some((name, line))
    }
}

struct Score {
    tool: &'static str,
    recall: f64,
    precision: f64,
    mbps: f64,
    findings: usize,
    misses: usize,
    missed: Vec<Loc>,
    false_positives: Vec<Loc>,
}

fn score(
    tool: &'static str,
    found: &BTreeSet<Loc>,
    truth: &BTreeSet<Loc>,
    bytes: usize,
    wall: Duration,
) -> Score {
    let hits = found.intersection(truth).count();
    let missed: Vec<Loc> = truth.difference(found).cloned().collect();
    let false_positives: Vec<Loc> = found.difference(truth).cloned().collect();
    Score {
        tool,
        recall: ratio(hits, truth.len()),
        precision: ratio(hits, found.len()),
        mbps: bytes as f64 / 1e6 / wall.as_secs_f64().max(1e-9),
        findings: found.len(),
        misses: missed.len(),
        missed,
        false_positives,
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memsync-scan-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let files = corpus::generate(args.seed, args.files_per_family);
    let (_tmp, dir) = match &args.dir {
        Some(d) => (None, d.clone()),
        None => {
            let t = tempfile::Builder::new()
                .prefix("memsync-scan-corpus-")
                .tempdir()
                .context("temporary directory")?;
            let d = t.path().to_path_buf();
            (Some(t), d)
        }
    };
    corpus::write_to(&dir, &files)
        .with_context(|| format!("writing the corpus to {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let notes = dir.join("notes");
    let bytes: usize = files.iter().map(|f| f.text.len()).sum();
    let truth = Truth::new(&files);
    println!(
        "corpus: {} files, {:.2} MB, {} secret labels, {} injection labels (seed {}, {} per family) in {}",
        files.len(),
        bytes as f64 / 1e6,
        truth.secret.len(),
        truth.injection.len(),
        args.seed,
        args.files_per_family,
        dir.display()
    );

    let mut scores = Vec::new();
    let mut notes_out = Vec::new();
    let mut injection_line = None;
    let mut injection: Option<Score> = None;
    let mut tools = args.tools.clone();
    tools.sort();
    tools.dedup();
    for tool in tools {
        if tool == Tool::Memsync {
            let (s, inj, line) = bench_memsync(&files, &truth, bytes);
            scores.push(s);
            injection = Some(inj);
            injection_line = Some(line);
            continue;
        }
        match bench_peer(tool, args, &dir, &notes, &truth, bytes) {
            Ok(Some(s)) => scores.push(s),
            Ok(None) => notes_out.push(format!("{}: not installed, skipped", tool.name())),
            Err(e) => notes_out.push(format!("{}: failed: {e:#}", tool.name())),
        }
    }

    println!();
    println!(
        "{:<16} {:>7} {:>10} {:>9} {:>9} {:>7}",
        "tool", "recall", "precision", "MB/s", "findings", "misses"
    );
    for s in &scores {
        println!(
            "{:<16} {:>7.3} {:>10.3} {:>9.2} {:>9} {:>7}",
            s.tool, s.recall, s.precision, s.mbps, s.findings, s.misses
        );
    }
    if let Some(line) = injection_line {
        println!();
        println!("{line}");
    }
    for n in &notes_out {
        println!("note: {n}");
    }
    if args.details {
        for s in &scores {
            println!();
            println!("{}: misses by family", s.tool);
            print_by_family(&s.missed, |loc| truth.family_of_label.get(loc).copied());
            println!("{}: false positives by family of the file", s.tool);
            print_by_family(&s.false_positives, |loc| {
                truth.family_of_file.get(&loc.0).copied()
            });
        }
        if let Some(inj) = &injection {
            println!();
            println!("memsync injection: misses by family");
            print_by_family(&inj.missed, |loc| truth.family_of_label.get(loc).copied());
            println!("memsync injection: false positives by family of the file");
            print_by_family(&inj.false_positives, |loc| {
                truth.family_of_file.get(&loc.0).copied()
            });
        }
    }
    Ok(())
}

fn print_by_family(locs: &[Loc], family: impl Fn(&Loc) -> Option<&'static str>) {
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for loc in locs {
        by.entry(family(loc).unwrap_or("?"))
            .or_default()
            .push(format!("{}:{}", loc.0, loc.1));
    }
    if by.is_empty() {
        println!("  (none)");
    }
    for (fam, v) in by {
        println!("  {fam:<28} {:>3}  {}", v.len(), v.join(" "));
    }
}

/// memsync in-process: every note, single thread, best of 3.
fn bench_memsync(files: &[CorpusFile], truth: &Truth, bytes: usize) -> (Score, Score, String) {
    let scanner = memsync_core::scan::scanner();
    let mut best = Duration::MAX;
    let mut results = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let r: Vec<_> = files.iter().map(|f| scanner.scan(&f.text)).collect();
        best = best.min(started.elapsed());
        results = r;
    }
    let mut secret = BTreeSet::new();
    let mut injection = BTreeSet::new();
    for (f, found) in files.iter().zip(&results) {
        for x in found {
            let cat = serde_json::to_value(x.category)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let Some(loc) = truth.canon(&f.name, x.line) else {
                continue;
            };
            match cat.as_str() {
                "secret" => {
                    secret.insert(loc);
                }
                "injection" => {
                    injection.insert(loc);
                }
                _ => {}
            }
        }
    }
    let s = score("memsync", &secret, &truth.secret, bytes, best);
    let inj = score("memsync", &injection, &truth.injection, bytes, best);
    let hits = injection.intersection(&truth.injection).count();
    let line = format!(
        "memsync injection: recall {:.3} ({}/{}), precision {:.3} ({} reported lines)",
        ratio(hits, truth.injection.len()),
        hits,
        truth.injection.len(),
        ratio(hits, injection.len()),
        injection.len()
    );
    (s, inj, line)
}

/// Finds an executable on `--extra-path` then `PATH`.
fn which(name: &str, extra: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    extra
        .iter()
        .cloned()
        .chain(std::env::split_paths(&path))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `cmd` with stdout to `out` and stderr to `err`, killing it after `timeout`.
fn run_bounded(
    cmd: &mut Command,
    out: &Path,
    err: &Path,
    timeout: Duration,
) -> Result<(i32, Duration)> {
    let stdout = std::fs::File::create(out)?;
    let stderr = std::fs::File::create(err)?;
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("spawning {cmd:?}"))?;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status.code().unwrap_or(-1), started.elapsed()));
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!("timed out after {} s", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn bench_peer(
    tool: Tool,
    args: &Args,
    dir: &Path,
    notes: &Path,
    truth: &Truth,
    bytes: usize,
) -> Result<Option<Score>> {
    let exe_name = tool.name();
    let Some(exe) = which(exe_name, &args.extra_path) else {
        return Ok(None);
    };
    let work = dir.join(format!("out-{exe_name}"));
    std::fs::create_dir_all(&work)?;
    let report = work.join("report.json");
    let stdout = work.join("stdout");
    let stderr = work.join("stderr");
    let timeout = Duration::from_secs(args.timeout_secs);

    let mut best = Duration::MAX;
    for _ in 0..args.runs.max(1) {
        let _ = std::fs::remove_file(&report);
        let mut cmd = Command::new(&exe);
        cmd.current_dir(dir);
        match tool {
            Tool::Kingfisher => {
                cmd.arg("scan")
                    .arg(notes)
                    .args([
                        "--no-validate",
                        "--no-update-check",
                        "--no-dedup",
                        "--format",
                        "json",
                        "-o",
                    ])
                    .arg(&report);
            }
            Tool::Credsweeper => {
                cmd.arg("--path").arg(notes).arg("--save-json").arg(&report);
            }
            Tool::DetectSecrets => {
                cmd.args(["scan", "--all-files"]).arg(notes);
            }
            Tool::Ripsecrets => {
                cmd.arg(notes);
            }
            Tool::Secretlint => {
                let cfg = work.join("secretlintrc.json");
                std::fs::write(
                    &cfg,
                    r#"{"rules":[{"id":"@secretlint/secretlint-rule-preset-recommend"}]}"#,
                )?;
                cmd.arg(format!("{}/**/*", notes.display()))
                    .arg("--secretlintrc")
                    .arg(&cfg)
                    .args(["--format", "json"]);
            }
            Tool::Memsync => unreachable!("in-process"),
        }
        let (code, wall) = run_bounded(&mut cmd, &stdout, &stderr, timeout)?;
        // Exit codes: 0 clean; 1 (ripsecrets, secretlint) or 200/205 (kingfisher) with findings.
        if !matches!(code, 0 | 1 | 200 | 205) {
            bail!("exit status {code}; see {} (stderr)", stderr.display());
        }
        best = best.min(wall);
    }

    let raw: Vec<(String, u32)> = match tool {
        Tool::Kingfisher => {
            let v: Value = read_json(&report)?;
            v["findings"]
                .as_array()
                .context("kingfisher: no `findings` array")?
                .iter()
                .filter_map(|f| {
                    Some((
                        f["finding"]["path"].as_str()?.to_owned(),
                        f["finding"]["line"].as_u64()? as u32,
                    ))
                })
                .collect()
        }
        Tool::Credsweeper => {
            let v: Value = read_json(&report)?;
            v.as_array()
                .context("credsweeper: report is not an array")?
                .iter()
                .flat_map(|f| f["line_data_list"].as_array().cloned().unwrap_or_default())
                .filter_map(|l| {
                    Some((
                        l["path"].as_str()?.to_owned(),
                        l["line_num"].as_u64()? as u32,
                    ))
                })
                .collect()
        }
        Tool::DetectSecrets => {
            let v: Value = read_json(&stdout)?;
            let results = v["results"]
                .as_object()
                .context("detect-secrets: no `results`")?;
            results
                .iter()
                .flat_map(|(path, items)| {
                    items
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(move |i| {
                            Some((path.clone(), i["line_number"].as_u64()? as u32))
                        })
                })
                .collect()
        }
        Tool::Ripsecrets => {
            let text = std::fs::read_to_string(&stdout)?;
            text.lines()
                .filter_map(|l| {
                    let mut it = l.splitn(3, ':');
                    let path = it.next()?;
                    let line = it.next()?.parse().ok()?;
                    Some((path.to_owned(), line))
                })
                .collect()
        }
        Tool::Secretlint => {
            let v: Value = read_json(&stdout)?;
            v.as_array()
                .context("secretlint: output is not an array")?
                .iter()
                .flat_map(|f| {
                    let path = f["filePath"].as_str().unwrap_or("").to_owned();
                    f["messages"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(move |m| {
                            Some((path.clone(), m["loc"]["start"]["line"].as_u64()? as u32))
                        })
                })
                .collect()
        }
        Tool::Memsync => unreachable!("in-process"),
    };
    let found: BTreeSet<Loc> = raw.iter().filter_map(|(p, l)| truth.canon(p, *l)).collect();
    Ok(Some(score(tool.name(), &found, &truth.secret, bytes, best)))
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}
