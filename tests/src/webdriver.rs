//! A small W3C WebDriver client (<https://www.w3.org/TR/webdriver2/>) and a launcher for a
//! headless Chromium driven by `chromedriver`, for the admin console's browser tests.
//!
//! Written over the `reqwest` the tests already use rather than taken from a crate: fantoccini
//! brings Mozilla's `webdriver` crate, `time`, `url`, `cookie` and a hyper client of its own;
//! thirtyfour downloads drivers from the network by default. The protocol is JSON over HTTP and
//! the tests need two dozen commands of it.
//!
//! Every [`Browser`] has its own `chromedriver` (on a port the kernel picks), its own profile,
//! `$HOME` and caches in a temporary directory, so tests can run browsers side by side. Chromium
//! reaches nothing but loopback: every host but `localhost`, `127.0.0.1` and `[::1]` resolves to
//! nothing, IP literals included.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail, ensure};
use base64::Engine;
use reqwest::Method;
use serde_json::{Value, json};

/// The Enter key, for [`Element::send_keys`] and [`Browser::press`].
pub const ENTER: &str = "\u{E007}";
/// The Tab key, for [`Element::send_keys`] and [`Browser::press`].
pub const TAB: &str = "\u{E004}";

/// The key under which WebDriver sends and receives element references.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long `Browser::start` waits for the driver to listen and answer ready.
const DRIVER_START: Duration = Duration::from_secs(30);

const INSTALL_HINT: &str =
    "install them with `apt-get install chromium chromium-driver` (.ci/run does)";

/// A headless Chromium session: the `chromedriver` child, the session, the temporary profile.
/// Dropping it kills the driver and every browser process under it.
pub struct Browser {
    session: Arc<Session>,
    driver: Driver,
}

/// A reference to an element of the page that was current when it was found.
#[derive(Clone)]
pub struct Element {
    session: Arc<Session>,
    id: String,
}

/// A cookie as the browser holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    pub name: String,
    pub value: String,
    pub path: Option<String>,
    pub http_only: bool,
    pub secure: bool,
    /// `Strict`, `Lax` or `None`, as the browser reports it.
    pub same_site: Option<String>,
    /// Seconds since the epoch; `None` for a session cookie.
    pub expiry: Option<u64>,
}

/// An error answer of the driver: `{"value": {"error", "message"}}`.
#[derive(Debug)]
pub struct WebDriverError {
    /// The command, e.g. `POST /element`.
    pub command: String,
    /// The W3C error code, e.g. `no such element`.
    pub error: String,
    pub message: String,
}

impl std::fmt::Display for WebDriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WebDriver {}: {}: {}",
            self.command, self.error, self.message
        )
    }
}

impl std::error::Error for WebDriverError {}

fn is_no_such_element(e: &anyhow::Error) -> bool {
    e.downcast_ref::<WebDriverError>()
        .is_some_and(|e| e.error == "no such element")
}

/// The HTTP side of one WebDriver session.
struct Session {
    http: reqwest::Client,
    /// `http://127.0.0.1:<port>/session/<id>`
    url: String,
}

impl Session {
    /// Sends a command (`path` relative to the session) and returns the answer's `value`.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let name = if path.is_empty() { "/session" } else { path };
        call(
            &self.http,
            method,
            &format!("{}{path}", self.url),
            name,
            body,
        )
        .await
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.call(Method::POST, path, Some(body)).await
    }

    async fn string(&self, path: &str) -> anyhow::Result<String> {
        match self.get(path).await? {
            Value::String(s) => Ok(s),
            other => bail!("WebDriver GET {path}: expected a string, got {other}"),
        }
    }

    fn element(self: &Arc<Self>, value: &Value) -> anyhow::Result<Element> {
        let id = value[ELEMENT_KEY]
            .as_str()
            .ok_or_else(|| anyhow!("WebDriver answered {value} where an element was expected"))?;
        Ok(Element {
            session: Arc::clone(self),
            id: id.to_owned(),
        })
    }

    fn elements(self: &Arc<Self>, value: &Value) -> anyhow::Result<Vec<Element>> {
        value
            .as_array()
            .ok_or_else(|| anyhow!("WebDriver answered {value} where a list was expected"))?
            .iter()
            .map(|v| self.element(v))
            .collect()
    }

    async fn current_url(&self) -> String {
        self.string("/url")
            .await
            .unwrap_or_else(|e| format!("<unknown page: {e}>"))
    }

    /// Finds under `scope` (`""` for the page, `/element/<id>` for an element).
    async fn find(self: &Arc<Self>, scope: &str, css: &str) -> anyhow::Result<Element> {
        let found = self
            .post(
                &format!("{scope}/element"),
                json!({"using": "css selector", "value": css}),
            )
            .await;
        match found {
            Ok(v) => self.element(&v),
            Err(e) if is_no_such_element(&e) => {
                let within = if scope.is_empty() {
                    String::new()
                } else {
                    " within the element".to_owned()
                };
                Err(e.context(format!(
                    "no element matches the CSS selector `{css}`{within} on {}",
                    self.current_url().await
                )))
            }
            Err(e) => Err(e.context(format!("finding `{css}` on {}", self.current_url().await))),
        }
    }

    async fn find_all(self: &Arc<Self>, scope: &str, css: &str) -> anyhow::Result<Vec<Element>> {
        let v = self
            .post(
                &format!("{scope}/elements"),
                json!({"using": "css selector", "value": css}),
            )
            .await
            .with_context(|| format!("finding all `{css}`"))?;
        self.elements(&v)
    }
}

/// One WebDriver HTTP exchange: the answer's `value`, or a [`WebDriverError`]. `name` names the
/// command in errors (e.g. `/element`).
async fn call(
    http: &reqwest::Client,
    method: Method,
    url: &str,
    name: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    let command = format!("{method} {name}");
    let mut req = http.request(method, url);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req
        .send()
        .await
        .with_context(|| format!("WebDriver {command}: chromedriver did not answer"))?;
    let status = resp.status();
    let text = resp
        .text()
        .await
        .with_context(|| format!("WebDriver {command}: reading the answer"))?;
    let mut answer: Value = serde_json::from_str(&text).with_context(|| {
        format!("WebDriver {command}: the answer (HTTP {status}) is not JSON: {text}")
    })?;
    let value = answer["value"].take();
    if !status.is_success() {
        let error = value["error"].as_str().unwrap_or("unknown error");
        let message = value["message"].as_str().unwrap_or(&text);
        // chromedriver starts its messages with the error code again.
        let message = message
            .strip_prefix(error)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(message);
        return Err(WebDriverError {
            command,
            error: error.to_owned(),
            message: message.trim().to_owned(),
        }
        .into());
    }
    Ok(value)
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless Chromium session in a fresh
    /// profile, window 1280x900, device scale factor 1. Chromium comes from `$MEMSYNC_CHROMIUM`,
    /// else `/usr/bin/chromium`, else `chromium` on `PATH`; chromedriver likewise from
    /// `$MEMSYNC_CHROMEDRIVER`.
    pub async fn start() -> anyhow::Result<Browser> {
        let chromium = find_binary("MEMSYNC_CHROMIUM", "chromium")?;
        let chromedriver = find_binary("MEMSYNC_CHROMEDRIVER", "chromedriver")?;
        let deadline = Instant::now() + DRIVER_START;
        let (mut driver, stdout) = Driver::spawn(&chromedriver)?;
        let port = driver.port(stdout, deadline).await?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(120))
            .build()
            .context("building the WebDriver HTTP client")?;
        let base = format!("http://127.0.0.1:{port}");
        driver.wait_ready(&http, &base, deadline).await?;

        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "timeouts": {"implicit": 0, "pageLoad": 60_000, "script": 30_000},
            "goog:chromeOptions": {
                "binary": chromium.to_string_lossy(),
                "args": chromium_args(&driver.profile()),
                // Open a blank page, not the new-tab page (a second of work for nothing).
                "prefs": {"session.restore_on_startup": 4, "session.startup_urls": ["about:blank"]},
            },
        }}});
        let session = call(
            &http,
            Method::POST,
            &format!("{base}/session"),
            "/session",
            Some(capabilities),
        )
        .await
        .map_err(|e| {
            anyhow!(
                "chromedriver could not start {}: {e:#}\nchromedriver's log ends with:\n{}",
                chromium.display(),
                driver.log_tail()
            )
        })?;
        let id = session["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("a new session without a sessionId: {session}"))?;
        let browser = Browser {
            session: Arc::new(Session {
                http,
                url: format!("{base}/session/{id}"),
            }),
            driver,
        };
        browser.set_window_size(1280, 900).await?;
        // A headless window has the OS focus only now and then: when several browsers run at
        // once, a page may not be focused when it loads, `document.hasFocus()` is false and the
        // keys pressed go nowhere. Focus emulation makes every page of this tab focused, as a
        // user's window in front is (it holds across navigations).
        browser
            .cdp(
                "Emulation.setFocusEmulationEnabled",
                json!({"enabled": true}),
            )
            .await
            .context("turning on focus emulation")?;
        Ok(browser)
    }

    /// Opens `url` and returns once it has loaded and been drawn. Chromium drops keyboard and
    /// mouse input meant for a new page until its first frame is on screen, which on a busy
    /// machine can come a while after the load event that ends a WebDriver navigation: keys
    /// pressed in between would be lost. Waiting for two animation frames (the second runs
    /// after the first has been drawn) closes that gap.
    pub async fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.session
            .post("/url", json!({"url": url}))
            .await
            .with_context(|| format!("navigating to {url}"))?;
        self.session
            .post(
                "/execute/async",
                json!({
                    "script": "const done = arguments[0]; \
                        requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
                    "args": [],
                }),
            )
            .await
            .with_context(|| format!("waiting for {url} to be drawn"))?;
        Ok(())
    }

    pub async fn current_url(&self) -> anyhow::Result<String> {
        self.session.string("/url").await
    }

    pub async fn title(&self) -> anyhow::Result<String> {
        self.session.string("/title").await
    }

    /// The page's HTML as the browser serializes its DOM now.
    pub async fn source(&self) -> anyhow::Result<String> {
        self.session.string("/source").await
    }

    /// The first element matching a CSS selector; an error naming the selector and the page when
    /// there is none.
    pub async fn find(&self, css: &str) -> anyhow::Result<Element> {
        self.session.find("", css).await
    }

    /// Every element matching a CSS selector, in document order (empty when none).
    pub async fn find_all(&self, css: &str) -> anyhow::Result<Vec<Element>> {
        self.session.find_all("", css).await
    }

    /// Polls [`Browser::find`] until the element exists or `timeout` passes; then the error
    /// holds the page's URL and the beginning of its text.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> anyhow::Result<Element> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.find(css).await {
                Ok(e) => return Ok(e),
                Err(e) if !is_no_such_element(&e) => return Err(e),
                Err(_) if Instant::now() >= deadline => break,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        let url = self.session.current_url().await;
        let text = self
            .body_text()
            .await
            .unwrap_or_else(|e| format!("<unreadable: {e}>"));
        let head: String = text.chars().take(2000).collect();
        bail!(
            "no element matched the CSS selector `{css}` on {url} within {timeout:?}; the page's text begins:\n{head}"
        )
    }

    /// Runs `script` as the body of a synchronous function (`return ...;`), with `args` as
    /// `arguments` (an [`Element`] converts into one), and returns its JSON value.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
        self.session
            .post("/execute/sync", json!({"script": script, "args": args}))
            .await
            .with_context(|| format!("running the script `{script}`"))
    }

    pub async fn cookies(&self) -> anyhow::Result<Vec<Cookie>> {
        let all = self.session.get("/cookie").await?;
        all.as_array()
            .ok_or_else(|| anyhow!("the cookies are not a list: {all}"))?
            .iter()
            .map(|c| {
                Ok(Cookie {
                    name: c["name"]
                        .as_str()
                        .ok_or_else(|| anyhow!("a cookie without a name: {c}"))?
                        .to_owned(),
                    value: c["value"].as_str().unwrap_or_default().to_owned(),
                    path: c["path"].as_str().map(str::to_owned),
                    http_only: c["httpOnly"].as_bool().unwrap_or(false),
                    secure: c["secure"].as_bool().unwrap_or(false),
                    same_site: c["sameSite"].as_str().map(str::to_owned),
                    expiry: c["expiry"].as_u64(),
                })
            })
            .collect()
    }

    /// Deletes every cookie visible to the current page.
    pub async fn delete_cookies(&self) -> anyhow::Result<()> {
        self.session
            .call(Method::DELETE, "/cookie", None)
            .await
            .map(drop)
    }

    /// Sizes the viewport (what a page and a screenshot get) to `width` x `height` CSS pixels, at
    /// a device pixel ratio of 1. The window is resized too, but the viewport is set exactly
    /// through DevTools (`Emulation.setDeviceMetricsOverride`): headless Chromium counts a
    /// toolbar into its window and applies a resize a moment later, so sizing by the window
    /// alone is a race.
    pub async fn set_window_size(&self, width: u32, height: u32) -> anyhow::Result<()> {
        self.session
            .post("/window/rect", json!({"width": width, "height": height}))
            .await
            .with_context(|| format!("resizing the window to {width}x{height}"))?;
        self.cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await
        .with_context(|| format!("setting the viewport to {width}x{height}"))?;
        // The page sees the new size once it has laid out again.
        let mut seen = Value::Null;
        for _ in 0..100 {
            seen = self
                .execute("return [window.innerWidth, window.innerHeight];", vec![])
                .await?;
            if seen == json!([width, height]) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        bail!("could not make the viewport {width}x{height}: the page says it is {seen}")
    }

    /// Writes a PNG of the viewport to `path` (its parent directories are created).
    pub async fn screenshot(&self, path: &Path) -> anyhow::Result<()> {
        let data = self.session.get("/screenshot").await?;
        write_png(data.as_str(), path)
    }

    /// Writes a PNG of the whole page (its scroll width and height), beyond the viewport, to
    /// `path`. Chromium-specific: it goes through chromedriver's DevTools command endpoint
    /// (`Page.captureScreenshot`).
    pub async fn screenshot_full_page(&self, path: &Path) -> anyhow::Result<()> {
        let size = self
            .execute(
                "const e = document.documentElement; return [e.scrollWidth, e.scrollHeight];",
                vec![],
            )
            .await?;
        let (Some(width), Some(height)) = (size[0].as_u64(), size[1].as_u64()) else {
            bail!("the page's scroll size is not two numbers: {size}");
        };
        let shot = self
            .cdp(
                "Page.captureScreenshot",
                json!({
                    "format": "png",
                    "captureBeyondViewport": true,
                    "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
                }),
            )
            .await?;
        write_png(shot["data"].as_str(), path)
    }

    /// A Chrome DevTools Protocol command through chromedriver (`goog/cdp/execute`).
    async fn cdp(&self, cmd: &str, params: Value) -> anyhow::Result<Value> {
        self.session
            .post("/goog/cdp/execute", json!({"cmd": cmd, "params": params}))
            .await
    }

    /// The text of the page's `<body>` as rendered (`document.body.innerText`).
    pub async fn body_text(&self) -> anyhow::Result<String> {
        match self
            .execute(
                "return document.body ? document.body.innerText : '';",
                vec![],
            )
            .await?
        {
            Value::String(s) => Ok(s),
            other => bail!("document.body.innerText is not a string: {other}"),
        }
    }

    /// The element that has the focus (the `<body>` when nothing else has).
    pub async fn active_element(&self) -> anyhow::Result<Element> {
        let v = self.session.get("/element/active").await?;
        self.session.element(&v)
    }

    /// Types `keys` into whatever has the focus, as a user at the keyboard would (each character
    /// pressed and released; [`TAB`], [`ENTER`] for those keys).
    pub async fn press(&self, keys: &str) -> anyhow::Result<()> {
        let strokes: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                let key = c.to_string();
                [
                    json!({"type": "keyDown", "value": key}),
                    json!({"type": "keyUp", "value": key}),
                ]
            })
            .collect();
        self.session
            .post(
                "/actions",
                json!({"actions": [{"type": "key", "id": "keyboard", "actions": strokes}]}),
            )
            .await
            .with_context(|| format!("pressing {keys:?}"))?;
        self.session
            .call(Method::DELETE, "/actions", None)
            .await
            .map(drop)
    }

    /// The process ids of the driver, every browser process under it and Chromium's crash
    /// handlers (which detach from the tree), now: all of them end with the `Browser`.
    pub fn process_ids(&self) -> Vec<u32> {
        self.driver
            .child
            .as_ref()
            .map(|c| browser_processes(c.id(), self.driver.dir.path()))
            .unwrap_or_default()
    }

    /// Ends the session (Chromium closes) and stops the driver; every process is gone when it
    /// returns, even when ending the session failed.
    pub async fn quit(mut self) -> anyhow::Result<()> {
        let ended = self.session.call(Method::DELETE, "", None).await;
        self.driver.stop();
        ended.map(drop).context("ending the WebDriver session")
    }
}

impl Element {
    pub async fn click(&self) -> anyhow::Result<()> {
        self.post("/click", json!({})).await
    }

    /// Types `text` into the element (focusing it first); [`ENTER`] and [`TAB`] press those keys.
    pub async fn send_keys(&self, text: &str) -> anyhow::Result<()> {
        self.post("/value", json!({"text": text})).await
    }

    /// Empties an input or textarea.
    pub async fn clear(&self) -> anyhow::Result<()> {
        self.post("/clear", json!({})).await
    }

    /// The element's rendered text.
    pub async fn text(&self) -> anyhow::Result<String> {
        self.session
            .string(&format!("/element/{}/text", self.id))
            .await
    }

    /// An HTML attribute; `None` when the element does not have it.
    pub async fn attr(&self, name: &str) -> anyhow::Result<Option<String>> {
        match self
            .session
            .get(&format!("/element/{}/attribute/{name}", self.id))
            .await?
        {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s)),
            other => Ok(Some(other.to_string())),
        }
    }

    /// A DOM property (e.g. `value`, `checked`), as JSON.
    pub async fn property(&self, name: &str) -> anyhow::Result<Value> {
        self.session
            .get(&format!("/element/{}/property/{name}", self.id))
            .await
    }

    /// The first element under this one matching a CSS selector.
    pub async fn find(&self, css: &str) -> anyhow::Result<Element> {
        self.session
            .find(&format!("/element/{}", self.id), css)
            .await
    }

    pub async fn find_all(&self, css: &str) -> anyhow::Result<Vec<Element>> {
        self.session
            .find_all(&format!("/element/{}", self.id), css)
            .await
    }

    /// Selects the `<option>` of this `<select>` whose value is `value`, as choosing it from the
    /// list would: the option becomes selected and the `<select>` fires `input` and `change`.
    ///
    /// Not by clicking the option: headless Chromium then opens the list's popup, which takes
    /// the keyboard focus from the page until it closes, and keys pressed after the next
    /// navigation could go to it.
    pub async fn select_value(&self, value: &str) -> anyhow::Result<()> {
        let mut values = Vec::new();
        for option in self.find_all("option").await? {
            let v = option.property("value").await?;
            if v == value {
                const CHOOSE: &str = "const [select, option] = arguments; \
                    if (select.disabled || option.disabled) { return false; } \
                    option.selected = true; \
                    select.dispatchEvent(new Event('input', {bubbles: true})); \
                    select.dispatchEvent(new Event('change', {bubbles: true})); \
                    return true;";
                let chosen = self
                    .session
                    .post(
                        "/execute/sync",
                        json!({"script": CHOOSE, "args": [Value::from(self), Value::from(&option)]}),
                    )
                    .await?;
                ensure!(
                    chosen == Value::Bool(true),
                    "the <select> or its option `{value}` is disabled"
                );
                return Ok(());
            }
            values.push(v.as_str().unwrap_or_default().to_owned());
        }
        bail!("the <select> has no <option> with the value `{value}`; its values: {values:?}")
    }

    async fn post(&self, what: &str, body: Value) -> anyhow::Result<()> {
        self.session
            .post(&format!("/element/{}{what}", self.id), body)
            .await
            .map(drop)
    }
}

impl std::fmt::Debug for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Element({})", self.id)
    }
}

/// An element as a script argument (`arguments[i]` is the DOM node).
impl From<&Element> for Value {
    fn from(e: &Element) -> Value {
        json!({ ELEMENT_KEY: e.id })
    }
}

impl From<Element> for Value {
    fn from(e: Element) -> Value {
        Value::from(&e)
    }
}

fn write_png(base64_png: Option<&str>, path: &Path) -> anyhow::Result<()> {
    let data = base64_png.ok_or_else(|| anyhow!("the screenshot answer holds no image"))?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .context("the screenshot is not base64")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
}

/// Chromium's command line: headless, isolated, quiet, and cut off from everything but loopback.
fn chromium_args(profile: &Path) -> Vec<String> {
    let mut args = vec![
        "--headless=new".to_owned(),
        format!("--user-data-dir={}", profile.display()),
        "--window-size=1280,900".to_owned(),
        "--force-device-scale-factor=1".to_owned(),
        // Screenshots show the page, not a scrollbar eating into its width.
        "--hide-scrollbars".to_owned(),
        "--lang=en-US".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        // Nothing Chromium would do on its own: no first-run UI, no background fetches, sync,
        // extensions, component updates, phishing or domain-reliability reports. (Its crash
        // handler stays: `--disable-crashpad-for-testing` crashes the network service of
        // Debian's build. It keeps its database under the temporary $HOME.)
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-default-apps".to_owned(),
        "--disable-client-side-phishing-detection".to_owned(),
        "--disable-domain-reliability".to_owned(),
        "--password-store=basic".to_owned(),
        // Loopback only: every host, IP literals included, maps to "not found" but localhost and
        // the loopback addresses, so nothing else is ever resolved or connected to.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1 , EXCLUDE [::1]"
            .to_owned(),
    ];
    if nix::unistd::geteuid().is_root() {
        // Chromium refuses to run as root with its sandbox.
        args.push("--no-sandbox".to_owned());
    }
    args
}

/// `$<var>`, else `/usr/bin/<name>`, else `<name>` on `PATH`.
fn find_binary(var: &str, name: &str) -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!(
            "${var} is {}, which is not a file; point it at {name}, or unset it and {INSTALL_HINT}",
            p.display()
        );
    }
    let usr_bin = Path::new("/usr/bin").join(name);
    if usr_bin.is_file() {
        return Ok(usr_bin);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            anyhow!("{name} is not installed (not in ${var}, /usr/bin or PATH): {INSTALL_HINT}")
        })
}

/// The `chromedriver` child and the temporary directory holding its log, Chromium's profile and
/// the `$HOME` both run with.
struct Driver {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Driver {
    fn spawn(chromedriver: &Path) -> anyhow::Result<(Driver, std::process::ChildStdout)> {
        let dir = tempfile::Builder::new()
            .prefix("memsync-browser-")
            .tempdir()
            .context("creating a temporary directory for the browser")?;
        let home = dir.path().join("home");
        for d in [
            dir.path().join("profile"),
            home.join(".config"),
            home.join(".cache"),
        ] {
            std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        }
        let stderr = std::fs::File::create(dir.path().join("chromedriver.stderr"))
            .context("creating chromedriver's stderr file")?;
        // Same process group as the test: a test runner that kills the test's group on a
        // timeout kills the driver and the browser with it.
        let mut child = Command::new(chromedriver)
            .arg("--port=0")
            .arg(format!(
                "--log-path={}",
                dir.path().join("chromedriver.log").display()
            ))
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", chromedriver.display()))?;
        let stdout = child.stdout.take().context("chromedriver's stdout")?;
        Ok((
            Driver {
                child: Some(child),
                dir,
            },
            stdout,
        ))
    }

    fn profile(&self) -> PathBuf {
        self.dir.path().join("profile")
    }

    /// The port chromedriver listens on, from its "started successfully on port N." line.
    async fn port(
        &mut self,
        stdout: std::process::ChildStdout,
        deadline: Instant,
    ) -> anyhow::Result<u16> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let port = line
                    .trim_end_matches('.')
                    .rsplit_once("started successfully on port ")
                    .and_then(|(_, p)| p.trim().parse::<u16>().ok());
                if let Some(port) = port
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(port);
                }
                // Keep draining so chromedriver never blocks on a full pipe.
            }
        });
        match tokio::time::timeout_at(deadline.into(), rx).await {
            Ok(Ok(port)) => Ok(port),
            Ok(Err(_)) => bail!(
                "chromedriver exited before listening; its log:\n{}",
                self.log_tail()
            ),
            Err(_) => bail!(
                "chromedriver did not listen within {DRIVER_START:?}; its log:\n{}",
                self.log_tail()
            ),
        }
    }

    /// Polls `GET /status` until the driver says it is ready.
    async fn wait_ready(
        &mut self,
        http: &reqwest::Client,
        base: &str,
        deadline: Instant,
    ) -> anyhow::Result<()> {
        loop {
            if let Ok(status) = call(
                http,
                Method::GET,
                &format!("{base}/status"),
                "/status",
                None,
            )
            .await
                && status["ready"] == true
            {
                return Ok(());
            }
            if let Some(Ok(Some(exit))) = self.child.as_mut().map(Child::try_wait) {
                bail!(
                    "chromedriver exited ({exit}) before it was ready; its log:\n{}",
                    self.log_tail()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "chromedriver was not ready within {DRIVER_START:?}; its log:\n{}",
                    self.log_tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last lines of chromedriver's log and stderr, for error messages.
    fn log_tail(&self) -> String {
        let mut out = String::new();
        for name in ["chromedriver.log", "chromedriver.stderr"] {
            let text = std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            for line in &lines[lines.len().saturating_sub(30)..] {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// Kills the driver and every process under it, and reaps the driver.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_all(child.id(), self.dir.path());
            let _ = child.wait();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Before the temporary directory goes: no browser may outlive the test, nor write into a
        // profile being removed.
        self.stop();
    }
}

/// Stops every process of [`browser_processes`] until a pass over /proc finds nothing new (a
/// stopped process cannot fork, so none escapes half-way), then kills them all.
fn kill_all(root: u32, dir: &Path) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let mut stopped: Vec<u32> = Vec::new();
    for _ in 0..100 {
        let fresh: Vec<u32> = browser_processes(root, dir)
            .into_iter()
            .filter(|p| !stopped.contains(p))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for pid in fresh {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGSTOP);
            stopped.push(pid);
        }
    }
    for pid in stopped {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
}

/// `root` and its descendants, and every process whose command line names `dir`: Chromium's
/// crash handlers detach into sessions of their own, but name their database under it. Read
/// from /proc; empty when `root` is gone and nothing names `dir`.
fn browser_processes(root: u32, dir: &Path) -> Vec<u32> {
    let marker = dir.as_os_str().as_encoded_bytes();
    let mut parents: Vec<(u32, u32)> = Vec::new();
    let mut found: Vec<u32> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if pid == root || cmdline.windows(marker.len()).any(|w| w == marker) {
            found.push(pid);
        }
    }
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for (pid, _) in parents.iter().filter(|(_, ppid)| *ppid == parent) {
            if !found.contains(pid) {
                found.push(*pid);
            }
        }
        i += 1;
    }
    found
}
