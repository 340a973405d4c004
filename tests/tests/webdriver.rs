//! The WebDriver client and Chromium launcher the console's browser tests use, against tiny pages
//! served on loopback by the test itself: forms, keys, scripts, cookies, screenshots, errors, the
//! loopback-only network, and no browser process left behind.

use std::path::Path;
use std::time::{Duration, Instant};

use memsync_e2e::read_proxied_request;
use memsync_e2e::webdriver::{Browser, ENTER, TAB};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const WAIT: Duration = Duration::from_secs(10);

/// Serves the test pages on a loopback port; returns the base URL.
async fn site() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = answer(sock).await;
            });
        }
    });
    url
}

fn page(title: &str, body: &str) -> String {
    format!("<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>")
}

async fn answer(mut sock: TcpStream) -> anyhow::Result<()> {
    let req = read_proxied_request(&mut sock).await?;
    let mut headers: Vec<String> = Vec::new();
    let (status, body) = match (req.method.as_str(), req.target.as_str()) {
        ("GET", "/form") => (
            "200 OK",
            page(
                "Form",
                r#"<form method="post" action="/echo">
                     <label for="q">Query</label> <input id="q" name="q" type="text">
                     <button id="send" type="submit">Send</button>
                   </form>"#,
            ),
        ),
        ("POST", "/echo") => {
            let form = String::from_utf8(req.body)?;
            let q = form
                .split('&')
                .find_map(|kv| kv.strip_prefix("q="))
                .map(form_decode)
                .unwrap_or_default();
            (
                "200 OK",
                page("Echo", &format!(r#"<p id="echo">{}</p>"#, escape(&q))),
            )
        }
        ("GET", "/cookie") => {
            headers.push("set-cookie: session=s3cret; Path=/; HttpOnly; SameSite=Strict".into());
            headers.push("set-cookie: theme=dark; Path=/; Max-Age=3600; SameSite=Lax".into());
            ("200 OK", page("Cookies", r#"<p id="done">cookies set</p>"#))
        }
        ("GET", "/script") => (
            "200 OK",
            page(
                "Script",
                r#"<p id="static">a static paragraph</p>
                   <script>window.flag = "set by the page";</script>"#,
            ),
        ),
        ("GET", "/keys" | "/keys?again") => (
            "200 OK",
            page(
                "Keys",
                r##"<a id="first" href="#one">one</a>
                   <label for="second">Second</label> <input id="second">
                   <button id="third" type="button">three</button>
                   <label for="pick">Pick</label>
                   <select id="pick"><option value="a">A</option><option value="b">B</option></select>
                   <p id="one">anchor</p>"##,
            ),
        ),
        ("GET", "/tall") => (
            "200 OK",
            page(
                "Tall",
                r#"<div style="height: 3000px; margin: 0">tall</div>"#,
            )
            .replace("<body>", r#"<body style="margin: 0">"#),
        ),
        _ => ("404 Not Found", page("Not found", "not found")),
    };
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for h in headers {
        head.push_str(&h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await?;
    sock.shutdown().await?;
    Ok(())
}

/// `application/x-www-form-urlencoded` value decoding.
fn form_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Width and height of a PNG file, read from its IHDR chunk after checking the signature.
fn png_size(path: &Path) -> (u32, u32) {
    let png = std::fs::read(path).unwrap();
    assert_eq!(
        &png[..8],
        b"\x89PNG\r\n\x1a\n",
        "not a PNG: {}",
        path.display()
    );
    assert_eq!(&png[12..16], b"IHDR", "the PNG does not start with IHDR");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test]
async fn a_form_is_filled_in_submitted_and_its_answer_read() {
    let site = site().await;
    let started = Instant::now();
    let browser = Browser::start().await.unwrap();
    eprintln!("Browser::start took {:?}", started.elapsed());
    assert_eq!(browser.current_url().await.unwrap(), "about:blank");

    browser.goto(&format!("{site}/form")).await.unwrap();
    assert_eq!(browser.title().await.unwrap(), "Form");
    let input = browser.find("#q").await.unwrap();
    input.send_keys("first try").await.unwrap();
    input.clear().await.unwrap();
    input.send_keys("hello <world> & more").await.unwrap();
    assert_eq!(
        input.property("value").await.unwrap(),
        "hello <world> & more"
    );
    assert_eq!(input.attr("name").await.unwrap().as_deref(), Some("q"));
    assert_eq!(input.attr("placeholder").await.unwrap(), None);
    browser.find("#send").await.unwrap().click().await.unwrap();

    let echo = browser.wait_for("#echo", WAIT).await.unwrap();
    assert_eq!(echo.text().await.unwrap(), "hello <world> & more");
    assert_eq!(browser.current_url().await.unwrap(), format!("{site}/echo"));
    assert!(
        browser
            .source()
            .await
            .unwrap()
            .contains("hello &lt;world&gt; &amp; more")
    );
    assert_eq!(browser.body_text().await.unwrap(), "hello <world> & more");

    // Enter in the text field submits the form, as it does for a person.
    browser.goto(&format!("{site}/form")).await.unwrap();
    let input = browser
        .find("form")
        .await
        .unwrap()
        .find("#q")
        .await
        .unwrap();
    input.send_keys(&format!("by enter{ENTER}")).await.unwrap();
    let echo = browser.wait_for("#echo", WAIT).await.unwrap();
    assert_eq!(echo.text().await.unwrap(), "by enter");
    browser.quit().await.unwrap();
}

#[tokio::test]
async fn scripts_run_with_arguments_and_see_what_the_page_set() {
    let site = site().await;
    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/script")).await.unwrap();

    let flag = browser
        .execute("return window.flag;", vec![])
        .await
        .unwrap();
    assert_eq!(flag, "set by the page");
    let sum = browser
        .execute(
            "return arguments[0] + arguments[1];",
            vec![json!(2), json!(40)],
        )
        .await
        .unwrap();
    assert_eq!(sum, 42);
    let p = browser.find("#static").await.unwrap();
    let tag = browser
        .execute(
            "return arguments[0].tagName + ' ' + arguments[0].textContent;",
            vec![(&p).into()],
        )
        .await
        .unwrap();
    assert_eq!(tag, "P a static paragraph");
    assert_eq!(
        browser.execute("return undefined;", vec![]).await.unwrap(),
        json!(null)
    );

    let err = browser
        .execute("throw new Error('boom from the page');", vec![])
        .await
        .unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("boom from the page"), "{msg}");
    browser.quit().await.unwrap();
}

#[tokio::test]
async fn cookies_are_read_back_with_their_flags_and_deleted() {
    let site = site().await;
    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/cookie")).await.unwrap();
    browser.wait_for("#done", WAIT).await.unwrap();

    let mut cookies = browser.cookies().await.unwrap();
    cookies.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(cookies.len(), 2, "{cookies:?}");
    let (session, theme) = (&cookies[0], &cookies[1]);
    assert_eq!(session.name, "session");
    assert_eq!(session.value, "s3cret");
    assert!(session.http_only);
    assert!(!session.secure);
    assert_eq!(session.same_site.as_deref(), Some("Strict"));
    assert_eq!(session.path.as_deref(), Some("/"));
    assert_eq!(session.expiry, None, "a session cookie has no expiry");
    assert_eq!(theme.name, "theme");
    assert!(!theme.http_only);
    assert_eq!(theme.same_site.as_deref(), Some("Lax"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expiry = theme.expiry.expect("Max-Age gives an expiry");
    assert!(
        expiry > now && expiry <= now + 3700,
        "{expiry} vs now {now}"
    );

    // The page's scripts see the plain cookie, never the HttpOnly one.
    let visible = browser
        .execute("return document.cookie;", vec![])
        .await
        .unwrap();
    assert_eq!(visible, "theme=dark");

    browser.delete_cookies().await.unwrap();
    assert_eq!(browser.cookies().await.unwrap(), vec![]);
    browser.quit().await.unwrap();
}

#[tokio::test]
async fn screenshots_are_pngs_the_size_of_the_window() {
    let site = site().await;
    let dir = tempfile::tempdir().unwrap();
    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/form")).await.unwrap();

    let wide = dir.path().join("nested/dirs/wide.png");
    browser.screenshot(&wide).await.unwrap();
    assert_eq!(png_size(&wide), (1280, 900));

    browser.set_window_size(390, 844).await.unwrap();
    let narrow = dir.path().join("narrow.png");
    browser.screenshot(&narrow).await.unwrap();
    assert_eq!(png_size(&narrow), (390, 844));
    let inner = browser
        .execute(
            "return [window.innerWidth, window.devicePixelRatio];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(inner, json!([390, 1]));

    // The whole of a page taller than the window.
    browser.set_window_size(1280, 900).await.unwrap();
    browser.goto(&format!("{site}/tall")).await.unwrap();
    let full = dir.path().join("full.png");
    browser.screenshot_full_page(&full).await.unwrap();
    let page = browser
        .execute(
            "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(page, json!([1280, 3000]));
    assert_eq!(png_size(&full), (1280, 3000));
    let viewport = dir.path().join("viewport.png");
    browser.screenshot(&viewport).await.unwrap();
    assert_eq!(png_size(&viewport), (1280, 900), "the window is as it was");
    browser.quit().await.unwrap();
}

#[tokio::test]
async fn the_keyboard_moves_the_focus_and_selects() {
    let site = site().await;
    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/keys")).await.unwrap();
    let id = async || {
        browser
            .active_element()
            .await
            .unwrap()
            .attr("id")
            .await
            .unwrap()
    };
    assert_eq!(
        id().await,
        None,
        "nothing has the focus yet: the <body> does"
    );

    browser.press(TAB).await.unwrap();
    assert_eq!(id().await.as_deref(), Some("first"));
    browser.press(TAB).await.unwrap();
    assert_eq!(id().await.as_deref(), Some("second"));
    browser.press("typed").await.unwrap();
    assert_eq!(
        browser
            .find("#second")
            .await
            .unwrap()
            .property("value")
            .await
            .unwrap(),
        "typed"
    );
    // Tab sent to an element moves on from it as well.
    let active = browser.active_element().await.unwrap();
    active.send_keys(TAB).await.unwrap();
    assert_eq!(id().await.as_deref(), Some("third"));

    let pick = browser.find("#pick").await.unwrap();
    assert_eq!(pick.property("value").await.unwrap(), "a");
    pick.select_value("b").await.unwrap();
    assert_eq!(pick.property("value").await.unwrap(), "b");
    let err = pick.select_value("zzz").await.unwrap_err().to_string();
    assert!(
        err.contains("`zzz`") && err.contains(r#"["a", "b"]"#),
        "{err}"
    );
    assert_eq!(pick.find_all("option").await.unwrap().len(), 2);

    // Enter on the focused link follows it.
    // A fresh address (not a reload of this one), so nothing of the page above survives.
    browser.goto(&format!("{site}/keys?again")).await.unwrap();
    browser.press(TAB).await.unwrap();
    let focused = browser
        .execute("return document.hasFocus()", vec![])
        .await
        .unwrap();
    assert_eq!(
        focused,
        json!(true),
        "the page, not a leftover popup, has the keyboard"
    );
    assert_eq!(id().await.as_deref(), Some("first"), "Tab reaches the link");
    browser.press(ENTER).await.unwrap();
    // Following the link happens after the key press returns: wait for it (at most 5 s).
    let want = format!("{site}/keys?again#one");
    let mut url = String::new();
    for _ in 0..100 {
        url = browser.current_url().await.unwrap();
        if url == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(url, want, "Enter on the focused link follows it");
    browser.quit().await.unwrap();
}

#[tokio::test]
async fn a_missing_element_is_an_error_naming_the_selector_and_the_page() {
    let site = site().await;
    let browser = Browser::start().await.unwrap();
    let url = format!("{site}/script");
    browser.goto(&url).await.unwrap();

    let err = format!("{:#}", browser.find("#nope").await.unwrap_err());
    assert!(err.contains("`#nope`") && err.contains(&url), "{err}");
    assert!(browser.find_all("#nope").await.unwrap().is_empty());

    let p = browser.find("#static").await.unwrap();
    let err = format!("{:#}", p.find("span.missing").await.unwrap_err());
    assert!(
        err.contains("`span.missing`") && err.contains("within"),
        "{err}"
    );

    let started = Instant::now();
    let err = format!(
        "{:#}",
        browser
            .wait_for(".never", Duration::from_millis(600))
            .await
            .unwrap_err()
    );
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert!(err.contains("`.never`") && err.contains(&url), "{err}");
    assert!(err.contains("a static paragraph"), "the page's text: {err}");

    let err = format!("{:#}", browser.find("p[[[").await.unwrap_err());
    assert!(
        err.contains("p[[[") && err.contains("invalid selector"),
        "{err}"
    );
    browser.quit().await.unwrap();
}

/// An address of this machine that the browser must not reach: 127.0.0.2 is served by the
/// loopback interface like 127.0.0.1 (any program here can connect to it, on every Linux machine,
/// even one with no other interface), but the browser's resolver rules let only 127.0.0.1,
/// localhost and [::1] through, so reaching it would mean the rules let other addresses through.
fn outside_address() -> std::net::IpAddr {
    std::net::IpAddr::from([127, 0, 0, 2])
}

#[tokio::test]
async fn chromium_reaches_loopback_and_nothing_else() {
    let site = site().await;
    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/form")).await.unwrap();
    browser.find("#q").await.unwrap();
    let port = site.rsplit(':').next().unwrap();
    browser
        .goto(&format!("http://localhost:{port}/form"))
        .await
        .unwrap();
    browser.find("#q").await.unwrap();

    // A listener on an address any program here reaches, but not the browser.
    let ip = outside_address();
    let outside = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = outside.local_addr().unwrap();
    let reached = tokio::spawn(async move { outside.accept().await.is_ok() });
    let url = format!("http://{addr}/form");
    let went = browser.goto(&url).await;
    let text = browser.body_text().await.unwrap_or_default();
    assert!(
        went.is_err() || browser.find("#q").await.is_err(),
        "Chromium loaded {url}: {text}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!reached.is_finished(), "Chromium connected to {addr}");
    reached.abort();
    browser.quit().await.unwrap();
}

/// Waits until none of `pids` runs (gone, or a zombie waiting to be reaped).
async fn all_ended(pids: &[u32]) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let running: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
                    !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
                })
            })
            .collect();
        if running.is_empty() || Instant::now() >= deadline {
            return running;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn no_browser_process_outlives_quit_or_a_panicking_test() {
    let site = site().await;
    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/form")).await.unwrap();
    let pids = browser.process_ids();
    assert!(
        pids.len() >= 3,
        "chromedriver, chromium and its helpers: {pids:?}"
    );
    browser.quit().await.unwrap();
    assert_eq!(
        all_ended(&pids).await,
        Vec::<u32>::new(),
        "left running after quit"
    );

    let browser = Browser::start().await.unwrap();
    browser.goto(&format!("{site}/form")).await.unwrap();
    let pids = browser.process_ids();
    assert!(pids.len() >= 3, "{pids:?}");
    let failed = tokio::spawn(async move {
        let _browser = browser;
        panic!("a test failing with its browser open");
    })
    .await;
    assert!(failed.unwrap_err().is_panic());
    assert_eq!(
        all_ended(&pids).await,
        Vec::<u32>::new(),
        "left running after a panic"
    );
}
