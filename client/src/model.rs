//! The feedback check's optional sentence-embedding model on this machine
//! (`memsync_core::feedback::embed`): with it, private and team feedback close in meaning are
//! paired as `related` even when worded apart, and the session-start notice ranks its pairs by
//! meaning too. It runs here; nothing is sent anywhere.
//!
//! Its directory (holding `model.safetensors` and `vocab.txt`, as `scripts/fetch-feedback-model
//! DIR` installs them) comes from MEMSYNC_FEEDBACK_MODEL, else from `feedback_model` in the
//! user's own `$XDG_CONFIG_HOME/memsync/config.toml` (the file of the model judge).

use std::path::PathBuf;

use crate::config::Env;

pub const ENV: &str = "MEMSYNC_FEEDBACK_MODEL";

/// The model's directory as configured (None: no model), with where the setting came from.
pub fn configured(env: &dyn Env) -> Result<Option<(PathBuf, String)>, String> {
    if let Some(v) = env.var(ENV).map(|v| v.trim().to_owned())
        && !v.is_empty()
    {
        return Ok(Some((PathBuf::from(v), ENV.to_owned())));
    }
    let Some(path) = crate::judge::user_config_path(env) else {
        return Ok(None);
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        format!(
            "{} is not valid TOML: {}",
            path.display(),
            e.message().trim()
        )
    })?;
    match table.get("feedback_model") {
        None => Ok(None),
        Some(toml::Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some((
            PathBuf::from(s.trim()),
            format!("`feedback_model` in {}", path.display()),
        ))),
        Some(_) => Err(format!(
            "`feedback_model` in {} must be a string: the directory of the model, e.g. feedback_model = \"/opt/memsync/feedback-model\"",
            path.display()
        )),
    }
}

/// Loads and installs the configured model for this process. `Ok(false)`: none configured (or
/// one is installed already). The error names the setting and what to do.
pub fn install(env: &dyn Env) -> Result<bool, String> {
    if memsync_core::feedback::embed::installed() {
        return Ok(false);
    }
    let Some((dir, origin)) = configured(env)? else {
        return Ok(false);
    };
    let model = memsync_core::feedback::embed::Model::load_dir(&dir).map_err(|e| {
        format!(
            "the feedback model ({origin}): {e}; scripts/fetch-feedback-model DIR installs it, or unset the setting to use the detector alone"
        )
    })?;
    Ok(memsync_core::feedback::embed::install(model))
}
