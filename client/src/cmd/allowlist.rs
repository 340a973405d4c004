//! `memsync allowlist list|add|remove`: the project's allowlist of scanner findings.

use std::path::Path;

use memsync_core::wire::AllowlistAdd;

use super::{
    Fail, Need, admin_failure, api_client, print_json, require_project, runtime, settings_at,
};
use crate::{AllowlistCmd, Global};

pub fn run(g: &Global, cwd: &Path, cmd: AllowlistCmd) -> Result<u8, Fail> {
    let settings = settings_at(g, cwd)?;
    let project = require_project(&settings)?;
    let api = api_client(g, &settings)?;
    let rt = runtime()?;
    let (command, need) = match &cmd {
        AllowlistCmd::List => (
            "allowlist list",
            Need::TeamMember(project.team().to_owned()),
        ),
        AllowlistCmd::Add { .. } => ("allowlist add", Need::TeamAdmin(project.team().to_owned())),
        AllowlistCmd::Remove { .. } => (
            "allowlist remove",
            Need::TeamAdmin(project.team().to_owned()),
        ),
    };
    let refused = |e| admin_failure(e, command, &need, &settings, &api, &rt);
    let list = match cmd {
        AllowlistCmd::List => rt.block_on(api.allowlist(&project)).map_err(refused)?,
        AllowlistCmd::Add {
            fingerprint,
            rule,
            reason,
        } => rt
            .block_on(api.allowlist_add(
                &project,
                &AllowlistAdd {
                    fingerprint,
                    rule,
                    reason,
                },
            ))
            .map_err(refused)?,
        AllowlistCmd::Remove { fingerprint } => {
            rt.block_on(api.allowlist_remove(&project, &fingerprint))
                .map_err(refused)?;
            rt.block_on(api.allowlist(&project)).map_err(refused)?
        }
    };
    if g.json {
        print_json(&list)?;
    } else if !g.quiet {
        if list.entries.is_empty() {
            println!("{project}: the allowlist is empty");
        }
        for e in &list.entries {
            println!(
                "{}  {}  by {} on {}: {}",
                e.fingerprint, e.rule, e.added_by, e.created_at, e.reason
            );
        }
    }
    Ok(0)
}
