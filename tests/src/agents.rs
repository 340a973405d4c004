//! The real coding agents in tests: where their binaries are (installed by `scripts/test` from the
//! npm registry), and a loopback stand-in for their model APIs that records every request and
//! answers as the model would: Anthropic's Messages API (`POST /v1/messages`, streamed) for
//! Claude Code, OpenAI's Responses API (`POST /v1/responses`, streamed) for Codex CLI. Its first
//! answer in a session is scripted (plain text, or a tool call that writes a file); once the
//! tool's result comes back it answers with text and the session ends.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The binary of a real agent: `$<env>` (scripts/test sets it), else a clear failure.
pub fn agent_binary(env: &str, what: &str) -> PathBuf {
    match std::env::var_os(env) {
        Some(p) if !p.is_empty() && std::path::Path::new(&p).is_file() => PathBuf::from(p),
        _ => panic!(
            "{env} does not name the {what} binary; run the tests through scripts/test, which installs it from the npm registry"
        ),
    }
}

pub fn codex_binary() -> PathBuf {
    agent_binary("MEMSYNC_TEST_CODEX", "Codex CLI")
}

pub fn claude_binary() -> PathBuf {
    agent_binary("MEMSYNC_TEST_CLAUDE", "Claude Code")
}

/// What the model answers first.
#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    /// A tool call that writes `content` to the absolute path `path` (Claude Code: its Write
    /// tool; Codex CLI: a shell command through `exec_command`).
    WriteFile {
        path: String,
        content: String,
    },
}

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub body: Value,
}

impl Recorded {
    /// The whole body as text, for `contains` checks.
    pub fn text(&self) -> String {
        self.body.to_string()
    }
}

type Script = dyn Fn(&Value) -> Reply + Send + Sync;

#[derive(Clone)]
struct StandIn {
    seen: Arc<Mutex<Vec<Recorded>>>,
    script: Arc<Script>,
}

/// The stand-in model API, on a loopback port.
pub struct ModelStandIn {
    pub url: String,
    seen: Arc<Mutex<Vec<Recorded>>>,
}

impl ModelStandIn {
    /// Starts it; `script` decides the first answer of each session from its request body.
    pub async fn start(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> ModelStandIn {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = StandIn {
            seen: seen.clone(),
            script: Arc::new(script),
        };
        let app = Router::new().fallback(move |uri: Uri, body: Bytes| {
            let state = state.clone();
            async move { answer(&state, &uri, &body) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ModelStandIn { url, seen }
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().expect("lock").clone()
    }

    pub fn clear(&self) {
        self.seen.lock().expect("lock").clear();
    }
}

fn answer(state: &StandIn, uri: &Uri, body: &[u8]) -> Response {
    let path = uri.path().to_owned();
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    state.seen.lock().expect("lock").push(Recorded {
        path: path.clone(),
        body: body.clone(),
    });
    let followup = has_tool_result(&body);
    let reply = if followup {
        Reply::Text("Done.".to_owned())
    } else {
        (state.script)(&body)
    };
    let sse = match path.as_str() {
        "/v1/messages" => anthropic_events(&reply),
        "/v1/responses" => openai_events(&reply),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut out = String::new();
    for (event, data) in sse {
        out.push_str(&format!("event: {event}\ndata: {data}\n\n"));
    }
    ([(header::CONTENT_TYPE, "text/event-stream")], out).into_response()
}

/// The request carries the result of a tool the model called (Anthropic `tool_result`, OpenAI
/// `function_call_output`).
fn has_tool_result(body: &Value) -> bool {
    let text = body.to_string();
    text.contains("\"tool_result\"") || text.contains("\"function_call_output\"")
}

fn anthropic_events(reply: &Reply) -> Vec<(&'static str, Value)> {
    let start = json!({"type": "message_start", "message": {"id": "msg_standin", "type": "message",
        "role": "assistant", "model": "claude-opus-5-5", "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}});
    let (block, delta, stop) = match reply {
        Reply::Text(t) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": t}),
            "end_turn",
        ),
        Reply::WriteFile { path, content } => (
            json!({"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}),
            json!({"type": "input_json_delta",
                   "partial_json": json!({"file_path": path, "content": content}).to_string()}),
            "tool_use",
        ),
    };
    vec![
        ("message_start", start),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

/// `s` as one single-quoted shell word.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn openai_events(reply: &Reply) -> Vec<(&'static str, Value)> {
    let item = match reply {
        Reply::Text(t) => json!({"type": "message", "role": "assistant", "id": "msg_1",
            "content": [{"type": "output_text", "text": t}]}),
        Reply::WriteFile { path, content } => {
            let dir = std::path::Path::new(path)
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let cmd = format!(
                "mkdir -p {} && printf '%s' {} > {}",
                sh_quote(&dir),
                sh_quote(content),
                sh_quote(path)
            );
            json!({"type": "function_call", "id": "fc_1", "name": "exec_command",
                   "arguments": json!({"cmd": cmd}).to_string(), "call_id": "call_1"})
        }
    };
    vec![
        (
            "response.created",
            json!({"type": "response.created", "response": {"id": "resp_1"}}),
        ),
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "item": item}),
        ),
        (
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
                "input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
                "output_tokens_details": null, "total_tokens": 2}}}),
        ),
    ]
}

/// The team dir the session-start context names ("Team memory for project P is in DIR
/// (synced …"), found anywhere in a request body.
pub fn team_dir_in(body: &Value, project: &str) -> Option<String> {
    let text = body.to_string();
    let marker = format!("Team memory for project {project} is in ");
    let start = text.find(&marker)? + marker.len();
    let rest = &text[start..];
    let end = rest.find(" (synced by memsync")?;
    Some(rest[..end].to_owned())
}

/// `$CODEX_HOME/config.toml` for Codex CLI against the stand-in: workspace-write sandbox with
/// memsync's memory dirs writable (as `install-hook --agent codex` advises), no analytics or
/// plugins (which would look up hosts off this machine). Top-level keys come before any table.
pub fn codex_config(standin_url: &str, codex_home: &std::path::Path) -> String {
    format!(
        "model = \"gpt-5-codex\"\nmodel_provider = \"standin\"\nsandbox_mode = \"workspace-write\"\n\n\
         [analytics]\nenabled = false\n\n[features]\nplugins = false\n\n\
         [sandbox_workspace_write]\nwritable_roots = [\"{}\"]\n\n\
         [model_providers.standin]\nname = \"standin\"\nbase_url = \"{standin_url}/v1\"\nwire_api = \"responses\"\n",
        codex_home.join("memsync").join("projects").display()
    )
}
