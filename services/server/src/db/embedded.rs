//! The embedded PostgreSQL: with no database URL, memsync-server runs a private cluster from the
//! machine's installed PostgreSQL binaries inside its data dir, on a Unix socket only (no TCP),
//! as the `postgres` OS user when started as root (initdb refuses root).

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail};
use sqlx::postgres::PgConnectOptions;

const PORT: u16 = 5432;
const SUPERUSER: &str = "memsync";
pub const DATABASE: &str = "memsync";

/// A running (or reused) embedded cluster.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    bindir: PathBuf,
    pgdata: PathBuf,
    socket_dir: PathBuf,
    run_as: Option<(u32, u32)>,
    started_here: bool,
    /// Holds the pid of the process that started (or adopted) the running cluster.
    owner_file: PathBuf,
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
    pub fn start(data_dir: &Path) -> anyhow::Result<Self> {
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
            pgdata,
            socket_dir,
            run_as,
            started_here: false,
            owner_file: PathBuf::new(),
        };
        if !pg.pgdata.join("PG_VERSION").is_file() {
            pg.initdb(&data_dir)?;
        }
        let owner_file = data_dir.join("postgres.owner");
        if pg.is_running()? {
            // A cluster left running by a process that died (SIGKILL) is adopted, so that it is
            // stopped when this process stops; one whose owner lives is only borrowed.
            let owner_alive = std::fs::read_to_string(&owner_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
                .is_some_and(|pid| {
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
                });
            if owner_alive {
                tracing::info!(pgdata = %pg.pgdata.display(), "reusing the running embedded PostgreSQL");
            } else {
                tracing::info!(pgdata = %pg.pgdata.display(), "reusing the running embedded PostgreSQL (its owner is gone; adopting it)");
                std::fs::write(&owner_file, std::process::id().to_string())?;
                pg.started_here = true;
            }
        } else {
            pg.pg_ctl_start()?;
            std::fs::write(&owner_file, std::process::id().to_string())?;
            pg.started_here = true;
        }
        pg.owner_file = owner_file;
        Ok(pg)
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

    fn is_running(&self) -> anyhow::Result<bool> {
        let out = self.run(
            "pg_ctl",
            [
                OsStr::new("status"),
                OsStr::new("-D"),
                self.pgdata.as_os_str(),
            ],
        )?;
        // pg_ctl status: 0 running, 3 not running, 4 no accessible data dir.
        Ok(out.status.code() == Some(0))
    }

    fn pg_ctl_start(&self) -> anyhow::Result<()> {
        let opts = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c port={PORT} \
             -c unix_socket_permissions=0700 -c max_connections=200",
            self.socket_dir.display()
        );
        let log = self.pgdata.join("memsync-postgres.log");
        tracing::info!(pgdata = %self.pgdata.display(), "starting the embedded PostgreSQL");
        let out = self.run(
            "pg_ctl",
            [
                OsStr::new("start"),
                OsStr::new("-w"),
                OsStr::new("-t"),
                OsStr::new("120"),
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

    /// Stops the cluster if this process started it; a reused cluster is left running.
    pub fn stop(&self) {
        if !self.started_here {
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
