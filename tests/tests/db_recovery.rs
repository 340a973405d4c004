//! A dead database must not need a human: the server restarts its embedded PostgreSQL when the
//! postmaster dies, answers 503 quickly (never 500, never after a 5 s wait) while the database
//! is down, serves again by itself once it is back (embedded or external), loses no
//! acknowledged write, reports itself unhealthy when the cluster cannot be restarted, and
//! refuses to share its embedded cluster with a second server.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const P: &str = "acme/api";
/// A refused request must come back well before the pool's 5 s acquire timeout.
const FAST_503: Duration = Duration::from_secs(2);
/// How long the tests wait for the server to serve again (the target is 10 s).
const RECOVERY_BOUND: Duration = Duration::from_secs(30);

/// Servers of tests where one token pushes under load, as fast as it can: without the default
/// limit of pushes per token and minute (what those tests measure is recovery, not limits).
const UNLIMITED_PUSHES: [&str; 2] = ["--token-pushes-per-minute", "0"];

fn data_dir(prefix: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
    open_up(tmp.path());
    let data = tmp.path().join("data");
    (tmp, data)
}

/// One answer a pusher got.
struct Outcome {
    path: String,
    content: String,
    status: u16,
    code: String,
    elapsed: Duration,
    at: Instant,
}

/// Pushers that each create a new file per push, in a loop, until `stop`.
fn spawn_pushers(
    c: &Client,
    n: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<Outcome>>> {
    (0..n)
        .map(|t| {
            let (c, stop) = (c.clone(), stop.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                for g in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    // A directory per 100 files: an index holds at most 200 lines.
                    let path = format!("p{t}/b{}/w{g}.md", g / 100);
                    let content = memory(
                        &format!("w{g}"),
                        "written during a database outage test",
                        "project",
                        &format!("pusher {t} write {g}\n"),
                    );
                    let started = Instant::now();
                    let r = c.push(P, &batch(vec![put(&path, &content, None)])).await;
                    let ok = r.status == 200;
                    out.push(Outcome {
                        path,
                        content,
                        status: r.status,
                        code: r.code().to_owned(),
                        elapsed: started.elapsed(),
                        at: Instant::now(),
                    });
                    tokio::time::sleep(Duration::from_millis(if ok { 10 } else { 50 })).await;
                }
                out
            })
        })
        .collect()
}

/// Polls a pull until the database has gone down and the server answers 200 again, checking
/// every refusal on the way: 503 `unavailable`, quickly. Down means a refusal was seen (a
/// connection whose backend has not noticed its postmaster's death yet may still answer first),
/// or a new postmaster runs (`data`'s `postmaster.pid` names another pid than `killed`: a
/// restart quick enough to fall between two polls). Returns when it served again and how many
/// refusals it saw.
async fn wait_until_down_then_serving(
    c: &Client,
    since: Instant,
    data: &Path,
    killed: i32,
) -> (Instant, usize) {
    let mut refused = 0;
    loop {
        let started = Instant::now();
        let r = c.pull(P, 0).await;
        let took = started.elapsed();
        if r.status == 200 {
            let restarted = postmaster_pid(data).is_some_and(|p| p != killed);
            if refused > 0 || restarted {
                return (Instant::now(), refused);
            }
            // A liveness bound, not a speed target: pooled backends of a SIGKILLed postmaster
            // may answer for a while, longer on a loaded machine (once past 10 s in CI).
            assert!(
                since.elapsed() < Duration::from_secs(30),
                "the server never refused a request and no new postmaster runs: the database did not go down"
            );
        } else {
            assert_eq!(r.status, 503, "while the database is down: {}", r.text);
            assert_eq!(r.code(), "unavailable", "{}", r.text);
            assert!(
                took < FAST_503,
                "a refused pull took {took:?}: it should fail fast"
            );
            refused += 1;
            assert!(
                since.elapsed() < RECOVERY_BOUND,
                "not serving again {RECOVERY_BOUND:?} after the database died"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls a pull until it answers 200 (each refusal a quick 503), at most RECOVERY_BOUND.
async fn wait_until_serving(c: &Client, since: Instant) -> Instant {
    loop {
        let started = Instant::now();
        let r = c.pull(P, 0).await;
        let took = started.elapsed();
        if r.status == 200 {
            return Instant::now();
        }
        assert_eq!(
            (r.status, r.code()),
            (503, "unavailable"),
            "while the database is down: {}",
            r.text
        );
        assert!(
            took < FAST_503,
            "a refused pull took {took:?}: it should fail fast"
        );
        assert!(
            since.elapsed() < RECOVERY_BOUND,
            "not serving again {RECOVERY_BOUND:?} after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn get_json(c: &Client, path: &str) -> Resp {
    c.send(c.http.get(format!("{}{path}", c.base))).await
}

/// Polls `path` until it answers `status`, at most `bound`.
async fn wait_for_status(c: &Client, path: &str, status: u16, bound: Duration) -> Resp {
    let started = Instant::now();
    loop {
        let r = get_json(c, path).await;
        if r.status == status {
            return r;
        }
        assert!(
            started.elapsed() < bound,
            "{path} still answers {} after {bound:?}: {}",
            r.status,
            r.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn sigkill_postmaster(data: &Path) -> i32 {
    let pid = postmaster_pid(data).expect("postmaster.pid");
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("SIGKILL the postmaster");
    pid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_postmaster_sigkill_restarts_and_loses_nothing_acknowledged() {
    let (_tmp, data) = data_dir("memsync-dbrec-");
    // One token pushes as fast as it can here: the push rate limit is not what this measures.
    let mut server = Server::start_embedded_with(data.clone(), &UNLIMITED_PUSHES);
    let server_pid = server.pid();
    let token = server.token("alice", &["acme"]);
    let c = server.client(&token);
    assert_eq!(get_json(&c, "/readyz").await.status, 200);

    let stop = Arc::new(AtomicBool::new(false));
    let pushers = spawn_pushers(&c, 4, &stop);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let killed_pid = sigkill_postmaster(&data);
    let killed_at = Instant::now();
    let (serving_at, refused) =
        wait_until_down_then_serving(&c, killed_at, &data, killed_pid).await;
    let recovery = serving_at - killed_at;
    println!(
        "embedded PostgreSQL SIGKILLed: serving again after {recovery:?} ({refused} pulls refused with 503 meanwhile)"
    );

    // Let the pushers write after the recovery too, then stop them.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut outcomes = Vec::new();
    for p in pushers {
        outcomes.extend(p.await.unwrap());
    }

    let readyz = wait_for_status(&c, "/readyz", 200, Duration::from_secs(5)).await;
    assert_eq!(readyz.body["status"], "ready", "{}", readyz.text);
    assert_eq!(get_json(&c, "/healthz").await.status, 200);
    assert!(server.is_running(), "the server exited");
    assert_eq!(server.pid(), server_pid);
    let new_pid = postmaster_pid(&data).expect("a postmaster runs again");
    assert_ne!(new_pid, killed_pid, "the postmaster was not restarted");
    let log = server.log();
    assert!(log.contains("the embedded PostgreSQL died"), "{log}");
    assert!(log.contains("the database is back"), "{log}");
    assert_eq!(
        log.matches("memsync-server listening").count(),
        1,
        "the server was restarted"
    );
    let mut causes: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["message"] == "database unavailable")
        .filter_map(|l| l["error"].as_str().map(str::to_owned))
        .collect();
    causes.sort();
    causes.dedup();
    println!("database errors answered with 503: {causes:#?}");

    assert_nothing_acknowledged_lost(&c, &outcomes, killed_at, serving_at).await;

    assert!(server.stop().success(), "{}", server.log());
    assert!(
        !data.join("postgres/postmaster.pid").exists(),
        "the restarted PostgreSQL was not stopped with the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn external_database_stopped_and_started_under_load_reconnects_by_itself() {
    let pg = PrivateCluster::start();
    let mut server = Server::start_with(Some(pg.url.clone()), None, &UNLIMITED_PUSHES);
    let token = server.token("alice", &["acme"]);
    let c = server.client(&token);
    let before = memory("before", "pushed before the outage", "project", "Kept.\n");
    let r = c
        .push(P, &batch(vec![put("before.md", &before, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Four clients push all along: before, during and after the outage.
    let stop = Arc::new(AtomicBool::new(false));
    let pushers = spawn_pushers(&c, 4, &stop);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    pg.stop();
    let stopped_at = Instant::now();
    // Down: /readyz says why once the supervisor noticed, and every request is refused
    // quickly with 503.
    loop {
        let readyz = get_json(&c, "/readyz").await;
        if readyz.body["error"]["details"]["database"] == "down" {
            assert_eq!(readyz.status, 503, "{}", readyz.text);
            assert_eq!(readyz.code(), "unavailable", "{}", readyz.text);
            break;
        }
        assert!(
            stopped_at.elapsed() < Duration::from_secs(10),
            "/readyz does not report the database down: {}",
            readyz.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..5 {
        let started = Instant::now();
        let r = c.pull(P, 0).await;
        let took = started.elapsed();
        assert_eq!((r.status, r.code()), (503, "unavailable"), "{}", r.text);
        assert!(took < FAST_503, "a refused pull took {took:?}");
        let m = memory("during", "pushed during the outage", "project", "No.\n");
        let started = Instant::now();
        let r = c.push(P, &batch(vec![put("during.md", &m, None)])).await;
        let took = started.elapsed();
        assert_eq!((r.status, r.code()), (503, "unavailable"), "{}", r.text);
        assert!(took < FAST_503, "a refused push took {took:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // /healthz stays 200: restarting the server would not bring an external database back.
    assert_eq!(get_json(&c, "/healthz").await.status, 200);
    println!(
        "external PostgreSQL stopped: every request refused quickly for {:?}",
        stopped_at.elapsed()
    );

    pg.start_again();
    let started_at = Instant::now();
    let serving_at = wait_until_serving(&c, started_at).await;
    println!(
        "external PostgreSQL started again: serving after {:?}",
        serving_at - started_at
    );
    wait_for_status(&c, "/readyz", 200, Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut outcomes = Vec::new();
    for p in pushers {
        outcomes.extend(p.await.unwrap());
    }
    assert_nothing_acknowledged_lost(&c, &outcomes, stopped_at, serving_at).await;
    let r = c.pull(P, 0).await;
    assert_eq!(
        change_of(&r.body, "before.md").unwrap()["content"],
        before.as_str()
    );
    assert!(
        change_of(&r.body, "during.md").is_none(),
        "a refused push was stored"
    );
    let after = memory("after", "pushed after the outage", "project", "Fine.\n");
    let r = c.push(P, &batch(vec![put("after.md", &after, None)])).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(server.is_running());
    assert!(server.log().contains("the database is back"));
}

/// Every push answer was a 200 or a quick 503 (none a 500); some were acknowledged before the
/// outage and some after it; and every acknowledged write is there, as written.
async fn assert_nothing_acknowledged_lost(
    c: &Client,
    outcomes: &[Outcome],
    down_at: Instant,
    serving_at: Instant,
) {
    let killed_at = down_at;
    // Every answer was a 200 or a quick 503; none a 500.
    let refused_pushes: Vec<&Outcome> = outcomes.iter().filter(|o| o.status != 200).collect();
    for o in &refused_pushes {
        assert_eq!(
            (o.status, o.code.as_str()),
            (503, "unavailable"),
            "push of {} answered {} {}",
            o.path,
            o.status,
            o.code
        );
        assert!(
            o.elapsed < FAST_503,
            "a refused push took {:?}: it should fail fast",
            o.elapsed
        );
    }
    let acked: Vec<&Outcome> = outcomes.iter().filter(|o| o.status == 200).collect();
    let slowest_refusal = refused_pushes.iter().map(|o| o.elapsed).max();
    println!(
        "pushes: {} acknowledged, {} refused with 503 (slowest refusal {slowest_refusal:?})",
        acked.len(),
        refused_pushes.len()
    );
    assert!(
        acked.iter().any(|o| o.at < killed_at),
        "no push was acknowledged before the kill"
    );
    assert!(
        acked.iter().any(|o| o.at > serving_at),
        "no push was acknowledged after the recovery"
    );

    // No acknowledged write is lost.
    let r = c.pull(P, 0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for o in &acked {
        let got = change_of(&r.body, &o.path)
            .unwrap_or_else(|| panic!("{} was acknowledged but is gone", o.path));
        assert_eq!(got["content"], o.content.as_str(), "{}", o.path);
    }
}

/// Runs `memsync-server serve` on `data`, expecting it to exit by itself.
fn serve_expecting_exit(data: &Path) -> std::process::Output {
    let mut child = std::process::Command::new(bin_path("memsync-server"))
        .arg("--data-dir")
        .arg(data)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env_remove("DATABASE_URL")
        .env_remove("MEMSYNC_DATABASE_URL")
        .env("MEMSYNC_LOG_FORMAT", "json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while matches!(child.try_wait(), Ok(None)) {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "a second server on the same data dir kept running: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn second_server_on_a_data_dir_refuses_and_adopts_after_a_crash() {
    let (_tmp, data) = data_dir("memsync-dbrec-two-");
    let mut first = Server::start_embedded(data.clone());
    let token = first.token("alice", &["acme"]);
    let m = memory("kept", "kept across owners", "project", "Here.\n");
    let r = first
        .client(&token)
        .push(P, &batch(vec![put("kept.md", &m, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let out = serve_expecting_exit(&data);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.pid())),
        "the refusal does not name the running server's pid {}: {err}",
        first.pid()
    );
    assert!(err.contains("--data-dir"), "{err}");
    assert!(out.stdout.is_empty(), "it listened");
    // The first server and its database are untouched.
    assert_eq!(first.client(&token).pull(P, 0).await.status, 200);
    assert!(first.is_running());

    // After the first server dies, its cluster (still running) is adopted by the next one.
    let postmaster = postmaster_pid(&data).unwrap();
    first.kill();
    let mut second = Server::start_embedded(data.clone());
    assert!(second.log().contains("adopting it"), "{}", second.log());
    assert_eq!(postmaster_pid(&data), Some(postmaster));
    let r = second.client(&token).pull(P, 0).await;
    assert_eq!(
        change_of(&r.body, "kept.md").unwrap()["content"],
        m.as_str()
    );
    // The adopter now owns it: the supervisor restarts it, and a stop stops it.
    let killed = sigkill_postmaster(&data);
    let c = second.client(&token);
    wait_until_down_then_serving(&c, Instant::now(), &data, killed).await;
    assert!(second.stop().success(), "{}", second.log());
    assert!(!data.join("postgres/postmaster.pid").exists());
}

#[tokio::test]
async fn unrestartable_embedded_cluster_makes_healthz_unhealthy() {
    let (_tmp, data) = data_dir("memsync-dbrec-fail-");
    let mut server = Server::start_embedded_with(data.clone(), &["--db-restart-attempts", "2"]);
    let token = server.token("alice", &["acme"]);
    let c = server.client(&token);
    assert_eq!(get_json(&c, "/healthz").await.status, 200);
    let m = memory("kept", "kept through the outage", "project", "Here.\n");
    let r = c.push(P, &batch(vec![put("kept.md", &m, None)])).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The cluster's directory goes away (a wrong mount, an operator's mistake) and its
    // postmaster dies: every restart fails.
    let pgdata = data.join("postgres");
    let away = data.join("postgres.away");
    let pid = postmaster_pid(&data).unwrap();
    std::fs::rename(&pgdata, &away).unwrap();
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    let killed_at = Instant::now();

    let healthz = wait_for_status(&c, "/healthz", 503, RECOVERY_BOUND).await;
    println!(
        "healthz unhealthy {:?} after the postmaster died",
        killed_at.elapsed()
    );
    assert_eq!(healthz.code(), "unavailable", "{}", healthz.text);
    let details = &healthz.body["error"]["details"];
    assert_eq!(details["database"], "failed", "{}", healthz.text);
    assert!(
        details["failed_restarts"].as_u64().unwrap() >= 2,
        "{}",
        healthz.text
    );
    assert!(healthz.headers.contains_key("retry-after"));
    let readyz = get_json(&c, "/readyz").await;
    assert_eq!(readyz.status, 503, "{}", readyz.text);
    let started = Instant::now();
    let r = c.pull(P, 0).await;
    assert_eq!((r.status, r.code()), (503, "unavailable"), "{}", r.text);
    assert!(started.elapsed() < FAST_503);
    assert!(
        server
            .log()
            .contains("the embedded PostgreSQL cannot be restarted"),
        "{}",
        server.log()
    );

    // Meanwhile a command does not start (or initialise) a cluster of its own in its place.
    let out = server.cli(&["token", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("restarting") && err.contains(&format!("pid {}", server.pid())),
        "{err}"
    );
    assert!(!pgdata.exists(), "a command created a cluster in its place");

    // It keeps trying: once the directory is back, the server serves (and is healthy) again.
    std::fs::rename(&away, &pgdata).unwrap();
    let back_at = Instant::now();
    wait_until_serving(&c, back_at).await;
    println!(
        "serving again {:?} after the cluster's directory came back",
        back_at.elapsed()
    );
    assert_eq!(get_json(&c, "/healthz").await.status, 200);
    assert_eq!(get_json(&c, "/readyz").await.status, 200);
    let r = c.pull(P, 0).await;
    assert_eq!(
        change_of(&r.body, "kept.md").unwrap()["content"],
        m.as_str()
    );
    assert!(server.is_running());
}

#[tokio::test]
async fn stale_postmaster_pid_naming_a_live_unrelated_process_is_cleared() {
    let (_tmp, data) = data_dir("memsync-dbrec-stale-");
    let mut server = Server::start_embedded(data.clone());
    let token = server.token("alice", &["acme"]);
    let m = memory("kept", "kept across the stale pid", "project", "Here.\n");
    let r = server
        .client(&token)
        .push(P, &batch(vec![put("kept.md", &m, None)]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let pidfile = data.join("postgres/postmaster.pid");
    let running = std::fs::read_to_string(&pidfile).unwrap();
    assert!(server.stop().success(), "{}", server.log());

    // The cluster died without cleaning up, and its pid now belongs to another live process:
    // PostgreSQL (and `pg_ctl status`) take that process for a running postmaster.
    let mut other = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let (_, rest) = running.split_once('\n').unwrap();
    std::fs::write(&pidfile, format!("{}\n{rest}", other.id())).unwrap();

    let mut server = Server::start_embedded(data.clone());
    let r = server.client(&token).pull(P, 0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        change_of(&r.body, "kept.md").unwrap()["content"],
        m.as_str()
    );
    assert!(
        server
            .log()
            .contains("removing a stale PostgreSQL lock file"),
        "{}",
        server.log()
    );
    assert!(
        matches!(other.try_wait(), Ok(None)),
        "the unrelated process was touched"
    );
    assert!(server.stop().success());
    let _ = other.kill();
    let _ = other.wait();
}
