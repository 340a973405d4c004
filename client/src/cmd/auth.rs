//! `memsync init`, `login`, `logout`: where the project is and who you are.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use memsync::api::ApiClient;
use memsync::config::{self, Credentials, ProcessEnv};
use memsync_core::ProjectId;
use serde_json::json;

use super::{Fail, runtime, settings_at};
use crate::Global;

pub fn init(g: &Global, cwd: &Path, force: bool) -> Result<u8, Fail> {
    let repo = config::find_repo(cwd).ok_or_else(|| {
        Fail::env("not inside a git repository: run `memsync init` at the project's repository")
    })?;
    let path = repo.root.join(".memsync.toml");
    let existing = config::ProjectFile::load(&path).map_err(Fail::env)?;
    if existing.is_some() && !force {
        return Err(Fail::env(format!(
            "{} exists; pass --force to overwrite it",
            path.display()
        )));
    }
    let project = match &g.project {
        Some(p) => p
            .parse::<ProjectId>()
            .map_err(|e| Fail::env(format!("--project {p}: {e}")))?,
        None => config::origin_project(&repo).ok_or_else(|| {
            Fail::env(
                "cannot derive the project from the `origin` remote; pass --project team/name",
            )
        })?,
    };
    let server = match &g.server {
        Some(s) => Some(s.clone()),
        None => std::env::var("MEMSYNC_SERVER").ok().or_else(|| {
            Credentials::load(&ProcessEnv)
                .ok()
                .and_then(|c| c.default_server().map(str::to_owned))
        }),
    };
    let file = config::ProjectFile {
        server: server.clone(),
        project: Some(project.to_string()),
        private_dir: None,
        team_dir: None,
    };
    file.save(&path).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({ "config": path, "project": project.as_str(), "server": server })
        );
    } else if !g.quiet {
        println!(
            "wrote {} (project {project}{})",
            path.display(),
            server.map(|s| format!(", server {s}")).unwrap_or_default()
        );
        println!(
            "commit it so the team shares it; then `memsync login` and `memsync install-hook`"
        );
    }
    Ok(0)
}

pub fn login(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .clone()
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    let token = match &g.token {
        Some(t) => t.clone(),
        None => {
            if std::io::stdin().is_terminal() {
                eprint!("paste the token for {server} and press Enter: ");
                let _ = std::io::stderr().flush();
            }
            let mut t = String::new();
            std::io::stdin()
                .take(64 * 1024)
                .read_to_string(&mut t)
                .map_err(|e| Fail::env(format!("reading the token from stdin: {e}")))?;
            t.trim().to_owned()
        }
    };
    if token.is_empty() {
        return Err(Fail::env(
            "no token given (pass --token or pipe it on stdin)",
        ));
    }
    let api = ApiClient::new(&server, &token, g.timeout).map_err(Fail::env)?;
    let me = runtime()?.block_on(api.whoami()).map_err(Fail::env)?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    creds.set(&server, &token);
    let path = creds.save(&ProcessEnv).map_err(Fail::env)?;
    if g.json {
        println!(
            "{}",
            json!({ "server": server, "user": me.name, "teams": me.teams, "credentials": path })
        );
    } else if !g.quiet {
        let teams: Vec<&String> = me.teams.keys().collect();
        println!(
            "logged in to {server} as {} (teams: {teams:?}); token saved in {}",
            me.name,
            path.display()
        );
    }
    Ok(0)
}

pub fn logout(g: &Global, cwd: &Path) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let server = settings
        .server
        .ok_or_else(|| Fail::env("which server? pass --server URL"))?;
    let mut creds = Credentials::load(&ProcessEnv).map_err(Fail::env)?;
    let removed = creds.remove(&server);
    creds.save(&ProcessEnv).map_err(Fail::env)?;
    if g.json {
        println!("{}", json!({ "server": server, "removed": removed }));
    } else if !g.quiet {
        println!(
            "{}",
            if removed {
                format!("forgot the token for {server}")
            } else {
                format!("no token stored for {server}")
            }
        );
    }
    Ok(0)
}
