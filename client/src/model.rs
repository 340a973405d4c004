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

/// Loads and installs the configured model for this process, with the vectors kept by the last
/// check ([`load_cache`]; call [`save_cache`] after comparing). `Ok(false)`: none configured (or
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
    let installed = memsync_core::feedback::embed::install(model);
    load_cache(env);
    Ok(installed)
}

/// The vectors of the last check, kept so that the next session start runs the model only on
/// memories that changed: `$XDG_CACHE_HOME/memsync/feedback-vectors.bin`, else
/// `$HOME/.cache/memsync/feedback-vectors.bin`. It holds vectors and the SHA-256 of each text,
/// never the text.
pub fn cache_path(env: &dyn Env) -> Option<PathBuf> {
    crate::config::xdg(env, "XDG_CACHE_HOME")
        .or_else(|| crate::config::home(env).map(|h| h.join(".cache")))
        .map(|d| d.join("memsync").join("feedback-vectors.bin"))
}

const MAGIC: &[u8] = b"memsync feedback vectors 1\n";

/// Hands the kept vectors to the installed model (none installed, no file, another model's or a
/// damaged file: nothing; it is only a cache).
pub fn load_cache(env: &dyn Env) {
    use memsync_core::feedback::embed;
    let (Some((id, dim)), Some(path)) = (embed::installed_id(), cache_path(env)) else {
        return;
    };
    let Ok(bytes) = std::fs::read(&path) else {
        return;
    };
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return;
    };
    if rest.len() < 36 || rest[..32] != id || rest[32..36] != (dim as u32).to_le_bytes() {
        return;
    }
    let entry = 32 + 4 * dim;
    let body = &rest[36..];
    if body.len() % entry != 0 {
        return;
    }
    embed::preload(body.chunks_exact(entry).map(|e| {
        let key: [u8; 32] = e[..32].try_into().unwrap_or([0; 32]);
        let v = e[32..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        (key, v)
    }));
}

/// Keeps the vectors this process used for the next one (replacing the file; a failure to write
/// only costs the next start the time to embed again).
pub fn save_cache(env: &dyn Env) {
    use memsync_core::feedback::embed;
    let (Some((id, dim)), Some(path)) = (embed::installed_id(), cache_path(env)) else {
        return;
    };
    let mut used = embed::used();
    if used.is_empty() {
        return;
    }
    used.sort_by_key(|e| e.0);
    let mut out = Vec::with_capacity(MAGIC.len() + 36 + used.len() * (32 + 4 * dim));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&id);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    for (key, v) in &used {
        out.extend_from_slice(key);
        for x in v.iter() {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    if std::fs::read(&path).is_ok_and(|old| old == out) {
        return;
    }
    let _ = crate::atomic::write(&path, &out, Some(0o600), crate::atomic::Durability::Cache);
}
