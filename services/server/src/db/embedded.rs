//! The embedded PostgreSQL: with no database URL, memsync-server runs a private cluster from the
//! machine's installed PostgreSQL binaries inside its data dir, on a Unix socket only (no TCP),
//! as the `postgres` OS user when started as root (initdb refuses root).

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail};
use sqlx::postgres::PgConnectOptions;

const PORT: u16 = 5432;
const SUPERUSER: &str = "memsync";
pub const DATABASE: &str = "memsync";

/// How long `pg_ctl start` may wait for the cluster on first start (which may include initdb's
/// first checkpoint) and on a restart by the supervisor.
const START_TIMEOUT_SECS: u32 = 120;
const RESTART_TIMEOUT_SECS: u32 = 60;

/// What a process starts the embedded cluster for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `serve`: at most one per data dir. It owns the cluster: starts it (or adopts one left
    /// running), restarts it when it dies, and stops it when it stops.
    Serve,
    /// `migrate`, `token …`, `export rebuild`: borrows a cluster whose owner is alive, else
    /// starts (or adopts) it for the duration of the command.
    Command,
}

/// The file a serving process holds an exclusive `flock` on for as long as it runs, with its pid
/// inside. A lock rather than "the pid in postgres.owner is alive": the kernel drops it however
/// the process dies, and a dead server's pid given to another process cannot fake it.
const SERVER_LOCK: &str = "postgres.server.lock";

/// A running (or reused) embedded cluster.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    bindir: PathBuf,
    pgdata: PathBuf,
    /// `pgdata` as the cluster's processes see it (their working directory).
    pgdata_real: PathBuf,
    socket_dir: PathBuf,
    run_as: Option<(u32, u32)>,
    started_here: bool,
    /// Holds the pid of the process that started (or adopted) the running cluster.
    owner_file: PathBuf,
    /// Held by a `serve` for its lifetime; dropping it releases the lock.
    _server_lock: Option<File>,
}

/// Finds the PostgreSQL server binaries: `MEMSYNC_PG_BINDIR`, `pg_config --bindir`, `initdb` on
/// `PATH`, then the newest `/usr/lib/postgresql/*/bin`.
pub fn find_bindir() -> anyhow::Result<PathBuf> {
    let has_tools = |d: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|t| d.join(t).is_file())
    };
    if let Some(d) = std::env::var_os("MEMSYNC_PG_BINDIR") {
        let d = PathBuf::from(d);
        if has_tools(&d) {
            return Ok(d);
        }
        bail!(
            "MEMSYNC_PG_BINDIR={} holds no initdb, pg_ctl and postgres",
            d.display()
        );
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_tools(&d) {
            return Ok(d);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let initdb = dir.join("initdb");
            if initdb.is_file() {
                let real = std::fs::canonicalize(&initdb).unwrap_or(initdb);
                if let Some(d) = real.parent()
                    && has_tools(d)
                {
                    return Ok(d.to_owned());
                }
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let d = e.path().join("bin");
            has_tools(&d).then_some((v, d))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d).context(
        "no PostgreSQL server binaries found (looked at MEMSYNC_PG_BINDIR, `pg_config --bindir`, \
         PATH and /usr/lib/postgresql/*/bin); install them (Debian: `apt-get install postgresql`) \
         or pass --database-url",
    )
}

impl EmbeddedPostgres {
    /// Initialises the cluster on first use, then starts it, or reuses it when already running.
    /// A `serve` refuses a data dir another live server serves.
    pub fn start(data_dir: &Path, purpose: Purpose) -> anyhow::Result<Self> {
        let bindir = find_bindir()?;
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("creating the data dir {}", data_dir.display()))?;
        let data_dir = std::fs::canonicalize(data_dir)?;
        let run_as = if nix::unistd::geteuid().is_root() {
            let user = nix::unistd::User::from_name("postgres")
                .ok()
                .flatten()
                .context(
                    "running as root, the embedded PostgreSQL needs the `postgres` OS user \
                     (initdb refuses root); create it or pass --database-url",
                )?;
            // The postgres user must reach the cluster inside our data dir.
            std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o711))?;
            check_traversable(&data_dir)?;
            Some((user.uid.as_raw(), user.gid.as_raw()))
        } else {
            None
        };
        let server_lock = match purpose {
            Purpose::Serve => Some(lock_for_serving(&data_dir)?),
            Purpose::Command => None,
        };
        let pgdata = data_dir.join("postgres");
        // The socket path must fit in sun_path (108 bytes).
        let socket_dir = if pgdata.as_os_str().len() + 16 < 100 {
            pgdata.clone()
        } else {
            let tag =
                &memsync_core::Sha256::of(pgdata.as_os_str().as_encoded_bytes()).to_hex()[..12];
            let d = std::env::temp_dir().join(format!("memsync-pg-{tag}"));
            std::fs::create_dir_all(&d)?;
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))?;
            if let Some((uid, gid)) = run_as {
                chown(&d, uid, gid)?;
            }
            d
        };
        let mut pg = EmbeddedPostgres {
            bindir,
            pgdata_real: pgdata.clone(),
            pgdata,
            socket_dir,
            run_as,
            started_here: false,
            owner_file: data_dir.join("postgres.owner"),
            _server_lock: server_lock,
        };
        // A command must not start (let alone initialise) the cluster of a live server that is
        // restarting it: it would become its owner, and stop it when it ends.
        let refuse_if_served = || match purpose {
            Purpose::Command => match server_lock_holder(&data_dir) {
                Some(server) => bail!(
                    "the embedded PostgreSQL of memsync-server ({server}) is not running: the \
                     server is restarting it (see its log); retry in a few seconds"
                ),
                None => Ok(()),
            },
            Purpose::Serve => Ok(()),
        };
        if !pg.pgdata.join("PG_VERSION").is_file() {
            refuse_if_served()?;
            pg.initdb(&data_dir)?;
        }
        pg.pgdata_real = std::fs::canonicalize(&pg.pgdata)?;
        let me = std::process::id();
        if pg.postmaster_pid().is_some() {
            // A cluster left running by a process that died (SIGKILL) is adopted, so that it is
            // stopped when this process stops; one whose owner lives is only borrowed by a
            // command. A server takes it over even then: its owner can only be a command (the
            // server lock says no other server lives), which then leaves it running.
            let owner =
                read_pid(&pg.owner_file).filter(|&pid| pid != me as i32 && process_alive(pid));
            match (owner, purpose) {
                (Some(_), Purpose::Command) => {
                    tracing::info!(pgdata = %pg.pgdata.display(), "reusing the running embedded PostgreSQL");
                }
                (Some(owner), Purpose::Serve) => {
                    tracing::info!(pgdata = %pg.pgdata.display(), owner, "reusing the running embedded PostgreSQL (taking it over from the command that started it)");
                    pg.take_ownership()?;
                }
                (None, _) => {
                    tracing::info!(pgdata = %pg.pgdata.display(), "reusing the running embedded PostgreSQL (its owner is gone; adopting it)");
                    pg.take_ownership()?;
                }
            }
        } else {
            refuse_if_served()?;
            pg.clear_stale_lock_files()?;
            pg.pg_ctl_start(START_TIMEOUT_SECS)?;
            pg.take_ownership()?;
        }
        Ok(pg)
    }

    fn take_ownership(&mut self) -> anyhow::Result<()> {
        std::fs::write(&self.owner_file, std::process::id().to_string())
            .with_context(|| format!("writing {}", self.owner_file.display()))?;
        self.started_here = true;
        Ok(())
    }

    pub fn pgdata(&self) -> &Path {
        &self.pgdata
    }

    /// The pid of the cluster's postmaster if it is alive, read from `postmaster.pid`.
    ///
    /// The supervisor calls this every 200 ms to notice the postmaster's death: the postmaster is
    /// not our child (`pg_ctl` daemonizes it), so there is no exit status to wait for, and three
    /// small file reads are cheaper than a query while telling a dead postmaster from one that
    /// is merely slow.
    pub fn postmaster_pid(&self) -> Option<i32> {
        read_pid(&self.pgdata.join("postmaster.pid")).filter(|&pid| self.is_cluster_process(pid))
    }

    /// True when `pid` is a live process of this cluster. That rejects what `kill(pid, 0)` (all
    /// that PostgreSQL and `pg_ctl status` check) calls alive: a zombie (a postmaster killed
    /// while its new parent does not reap it stays one) and an unrelated process that was given
    /// the dead postmaster's pid. On Linux: `/proc/<pid>/stat` says it is not a zombie and runs
    /// `postgres`, and its working directory (every PostgreSQL server process works in its data
    /// directory) is the cluster's. When the cwd may not be read (root without CAP_SYS_PTRACE,
    /// as in a container, looking at the `postgres` user's process), a live `postgres` process
    /// counts as ours: better a restart that waits than a second postmaster on the data dir.
    fn is_cluster_process(&self, pid: i32) -> bool {
        if pid <= 0 {
            return false;
        }
        if !Path::new("/proc/self/stat").exists() {
            return process_alive(pid);
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false; // gone
        };
        // `pid (comm) state ...`; comm may itself hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            return false;
        };
        let comm = &stat[open + 1..close];
        let state = stat[close + 1..].trim_start().chars().next();
        if comm != "postgres" || matches!(state, Some('Z' | 'X' | 'x')) {
            return false;
        }
        match std::fs::read_link(format!("/proc/{pid}/cwd")) {
            Ok(cwd) => cwd == self.pgdata_real,
            Err(_) => true,
        }
    }

    /// Pids of the live processes seen working in the data directory (whose cwd may be read).
    fn cluster_processes(&self) -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .is_ok_and(|cwd| cwd == self.pgdata_real)
            })
            .collect()
    }

    /// How many processes are still attached to the System V shared memory segment named on line
    /// 7 of `postmaster.pid` (`/proc/sysvipc/shm` is readable by anyone): PostgreSQL's own
    /// interlock against starting while a backend of the dead postmaster still runs.
    fn shared_memory_attachments(&self) -> Option<u64> {
        let pidfile = std::fs::read_to_string(self.pgdata.join("postmaster.pid")).ok()?;
        let mut ids = pidfile.lines().nth(6)?.split_whitespace();
        let key: i64 = ids.next()?.parse().ok()?;
        let shmid: i64 = ids.next()?.parse().ok()?;
        let table = std::fs::read_to_string("/proc/sysvipc/shm").ok()?;
        table.lines().skip(1).find_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let same = cols.first()?.parse::<i64>().ok()? == key
                && cols.get(1)?.parse::<i64>().ok()? == shmid;
            if same {
                cols.get(6)?.parse().ok()
            } else {
                None
            }
        })
    }

    /// Removes `postmaster.pid` and the socket's lock file when they name a pid that is not a
    /// live process of this cluster. PostgreSQL removes a lock naming a pid that `kill(pid, 0)`
    /// calls dead by itself, but refuses to start over a zombie's or a reused pid (checked: a
    /// SIGKILLed postmaster stays a zombie until its new parent reaps it, and `pg_ctl start`
    /// fails with "lock file "postmaster.pid" already exists" meanwhile). Only once no process
    /// of the old cluster is left: a backend orphaned by the dead postmaster still uses the
    /// cluster's shared memory, and PostgreSQL's own check for that needs `postmaster.pid`.
    fn clear_stale_lock_files(&self) -> anyhow::Result<()> {
        let left = self.cluster_processes();
        if !left.is_empty() {
            bail!(
                "{} process(es) of the previous PostgreSQL still work in {} (pids {left:?}); it can start once they exit",
                left.len(),
                self.pgdata.display()
            );
        }
        if let Some(n) = self.shared_memory_attachments().filter(|&n| n > 0) {
            bail!(
                "{n} process(es) of the previous PostgreSQL of {} still hold its shared memory; it can start once they exit",
                self.pgdata.display()
            );
        }
        for lock in [
            self.pgdata.join("postmaster.pid"),
            self.socket_dir.join(format!(".s.PGSQL.{PORT}.lock")),
        ] {
            if let Some(pid) = read_pid(&lock)
                && !self.is_cluster_process(pid)
            {
                tracing::info!(lock = %lock.display(), pid, "removing a stale PostgreSQL lock file (its pid is not a live process of this cluster)");
                if let Err(e) = std::fs::remove_file(&lock)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    return Err(e).with_context(|| format!("removing {}", lock.display()));
                }
            }
        }
        Ok(())
    }

    /// Starts the cluster again after its postmaster died (the supervisor's job, in `serve`).
    pub fn restart(&self) -> anyhow::Result<()> {
        if !self.pgdata.join("PG_VERSION").is_file() {
            bail!(
                "{} holds no PostgreSQL cluster any more (no PG_VERSION)",
                self.pgdata.display()
            );
        }
        self.clear_stale_lock_files()?;
        self.pg_ctl_start(RESTART_TIMEOUT_SECS)?;
        std::fs::write(&self.owner_file, std::process::id().to_string())
            .with_context(|| format!("writing {}", self.owner_file.display()))
    }

    fn initdb(&self, data_dir: &Path) -> anyhow::Result<()> {
        if self.pgdata.exists() {
            bail!(
                "{} exists but holds no PostgreSQL cluster (no PG_VERSION); move it away or pass --database-url",
                self.pgdata.display()
            );
        }
        // initdb into a scratch dir and rename, so a crash mid-way leaves no half cluster.
        let scratch = data_dir.join("postgres.initdb-tmp");
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch)?;
        }
        std::fs::create_dir(&scratch)?;
        std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o700))?;
        if let Some((uid, gid)) = self.run_as {
            chown(&scratch, uid, gid)?;
        }
        tracing::info!(pgdata = %self.pgdata.display(), "initialising the embedded PostgreSQL");
        let out = self.run(
            "initdb",
            [
                OsStr::new("-D"),
                scratch.as_os_str(),
                OsStr::new("-U"),
                OsStr::new(SUPERUSER),
                OsStr::new("--auth=trust"),
                OsStr::new("--encoding=UTF8"),
                OsStr::new("--locale=C"),
            ],
        )?;
        if !out.status.success() {
            bail!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        std::fs::rename(&scratch, &self.pgdata)?;
        Ok(())
    }

    fn pg_ctl_start(&self, timeout_secs: u32) -> anyhow::Result<()> {
        let mut opts = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c port={PORT} \
             -c unix_socket_permissions=0700 -c max_connections=200",
            self.socket_dir.display()
        );
        // Crash recovery first fsyncs every file of the cluster, one by one: on the test VM that
        // was 3 s of a 3.1 s restart after a SIGKILL, against 0.4 s in all with one syncfs(2) of
        // the filesystem instead (PostgreSQL 14+, Linux only).
        let major = std::fs::read_to_string(self.pgdata.join("PG_VERSION"))
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok());
        if cfg!(target_os = "linux") && major.is_some_and(|v| v >= 14) {
            opts.push_str(" -c recovery_init_sync_method=syncfs");
        }
        let timeout = timeout_secs.to_string();
        let log = self.pgdata.join("memsync-postgres.log");
        tracing::info!(pgdata = %self.pgdata.display(), "starting the embedded PostgreSQL");
        let out = self.run(
            "pg_ctl",
            [
                OsStr::new("start"),
                OsStr::new("-w"),
                OsStr::new("-t"),
                OsStr::new(&timeout),
                OsStr::new("-D"),
                self.pgdata.as_os_str(),
                OsStr::new("-l"),
                log.as_os_str(),
                OsStr::new("-o"),
                OsStr::new(&opts),
            ],
        )?;
        if !out.status.success() {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(10).collect();
            bail!(
                "the embedded PostgreSQL did not start: {}\n{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        Ok(())
    }

    /// Stops the cluster if this process started it; a reused cluster is left running, and so
    /// is one a server has taken over from this process meanwhile.
    pub fn stop(&self) {
        if !self.started_here {
            return;
        }
        let owner = read_pid(&self.owner_file);
        if owner != Some(std::process::id() as i32) {
            tracing::info!(
                owner,
                "leaving the embedded PostgreSQL running: another process owns it now"
            );
            return;
        }
        tracing::info!("stopping the embedded PostgreSQL");
        match self.run(
            "pg_ctl",
            [
                OsStr::new("stop"),
                OsStr::new("-m"),
                OsStr::new("fast"),
                OsStr::new("-w"),
                OsStr::new("-D"),
                self.pgdata.as_os_str(),
            ],
        ) {
            Ok(out) if out.status.success() => {
                let _ = std::fs::remove_file(&self.owner_file);
            }
            Ok(out) => tracing::warn!(
                stderr = %String::from_utf8_lossy(&out.stderr).trim(),
                "pg_ctl stop failed"
            ),
            Err(e) => tracing::warn!(error = %e, "pg_ctl stop failed"),
        }
    }

    pub fn connect_options(&self, database: &str) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.socket_dir)
            .port(PORT)
            .username(SUPERUSER)
            .database(database)
    }

    fn run<I, S>(&self, tool: &str, args: I) -> anyhow::Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(self.bindir.join(tool));
        cmd.args(args).current_dir("/").env("LC_ALL", "C");
        cmd.stdin(std::process::Stdio::null());
        if let Some((uid, gid)) = self.run_as {
            cmd.uid(uid).gid(gid);
        }
        cmd.output()
            .with_context(|| format!("running {}", self.bindir.join(tool).display()))
    }
}

/// Takes the server lock of `data_dir`, or names the live server that holds it.
fn lock_for_serving(data_dir: &Path) -> anyhow::Result<File> {
    let path = data_dir.join(SERVER_LOCK);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    // A command probing the lock (`server_lock_holder`) holds it for a moment: retry briefly.
    let mut tries = 0;
    let locked = loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) if tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => break other,
        }
    };
    match locked {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = holder_pid(&path);
            bail!(
                "another memsync-server ({holder}) is serving from {}, and its embedded PostgreSQL belongs to it; \
                 stop that process first, or give this one another --data-dir",
                data_dir.display()
            );
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    }
    file.set_len(0)?;
    file.write_all(std::process::id().to_string().as_bytes())?;
    Ok(file)
}

/// "pid N" of the live server holding the server lock of `data_dir`, if one does.
pub fn server_lock_holder(data_dir: &Path) -> Option<String> {
    let path = data_dir.join(SERVER_LOCK);
    let file = File::open(&path).ok()?;
    match file.try_lock_shared() {
        Err(std::fs::TryLockError::WouldBlock) => Some(holder_pid(&path)),
        _ => None,
    }
}

fn holder_pid(lock: &Path) -> String {
    read_pid(lock).map_or_else(|| "unknown pid".to_owned(), |p| format!("pid {p}"))
}

/// The pid on the first line of a pid or lock file.
fn read_pid(path: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().next()?.trim().parse().ok()
}

fn process_alive(pid: i32) -> bool {
    use nix::errno::Errno;
    matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Ok(()) | Err(Errno::EPERM)
    )
}

fn chown(path: &Path, uid: u32, gid: u32) -> anyhow::Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .with_context(|| format!("chown {}", path.display()))
}

/// Every ancestor of `dir` must let others traverse it, or the postgres user can't reach it.
fn check_traversable(dir: &Path) -> anyhow::Result<()> {
    for anc in dir.ancestors().skip(1) {
        let meta = std::fs::metadata(anc)?;
        if meta.mode() & 0o001 == 0 {
            bail!(
                "the embedded PostgreSQL runs as the `postgres` user, which cannot enter {} \
                 (mode {:o}); choose a --data-dir outside it (e.g. /var/lib/memsync) or pass --database-url",
                anc.display(),
                meta.mode() & 0o7777
            );
        }
    }
    Ok(())
}
