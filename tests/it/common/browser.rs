//! A small Chrome DevTools Protocol driver for the tests: real headless Chromium
//! (Debian's `chromium`), driven over one websocket on loopback.
//!
//! [`Browser::launch`] starts `chromium --headless --remote-debugging-port=0` with a new
//! empty profile, reads the port it chose from `<profile>/DevToolsActivePort`, opens a
//! page target and attaches to it (a flattened session: one connection, commands
//! carry the session id). Every command waits for the response with its own id;
//! events in between are skipped. Dropping the browser closes it, kills its process
//! group (renderers included) and removes the profile.
//!
//! Chromium must never reach anything but 127.0.0.1: background networking, component
//! updates, sync and QUIC are off, and the host resolver answers "not found" for every
//! name, so only IP literals on loopback can be loaded.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

/// How long one DevTools command may take before the test fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What the tests print when they skip because no Chromium is installed.
pub const MISSING: &str = "headless Chromium not found (looked at $TRAWL_CHROMIUM, \
    /usr/bin/chromium and `chromium` on PATH): install Debian's package with \
    `apt-get install -y chromium` (`make test` does it when run as root), or point \
    TRAWL_CHROMIUM at a Chromium binary";

/// The Chromium binary: `$TRAWL_CHROMIUM`, `/usr/bin/chromium`, or `chromium` /
/// `chromium-browser` on PATH (the library's lookup); None when there is none.
pub fn chromium() -> Option<PathBuf> {
    trawl::net::browser::chromium_path(Path::new(""))
}

/// Whether Chromium is installed; prints why the test is skipped when it is not.
pub fn available() -> bool {
    let found = chromium().is_some();
    if found {
        super::ran_with("chromium");
    } else {
        super::missing("chromium", MISSING);
    }
    found
}

/// A headless Chromium with one page, closed and cleaned up on drop.
pub struct Browser {
    // Dropped after `ws` (fields drop in order): Browser::drop asks Chromium to close,
    // then the process drops.
    ws: WebSocket<TcpStream>,
    process: Process,
    session: String,
    next_id: u64,
}

impl Browser {
    /// Starts Chromium and opens a blank page; None (after printing [`MISSING`]) when
    /// no Chromium is installed. Panics with Chromium's own output when it is
    /// installed but does not start.
    pub fn launch() -> Option<Browser> {
        let Some(exe) = chromium() else {
            super::missing("chromium", MISSING);
            return None;
        };
        super::ran_with("chromium");
        Some(Browser::launch_with(&exe))
    }

    fn launch_with(exe: &Path) -> Browser {
        let dir = tempfile::tempdir().expect("a temporary directory for the Chromium profile");
        let profile = dir.path().join("profile");
        std::fs::create_dir(&profile).expect("create the Chromium profile directory");
        let log = std::fs::File::create(dir.path().join("chromium.log")).expect("chromium.log");
        let child = Command::new(exe)
            .args(trawl::net::browser::HEADLESS_FLAGS)
            .args([
                "--hide-scrollbars",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--window-size=1200,900",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("chromium.log"))
            .stderr(log)
            // Its own process group: drop kills the renderers and helpers with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", exe.display()));
        // From here on a panic (Chromium did not start) kills it on unwinding.
        let process = Process { child, dir };
        let ws = Browser::connect(exe, &process);
        let mut browser = Browser {
            ws,
            process,
            session: String::new(),
            next_id: 0,
        };
        let target = browser.call_browser("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().unwrap_or_default().to_string();
        let attached = browser.call_browser(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("Target.attachToTarget returned no sessionId: {attached}"))
            .to_string();
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        browser
    }

    /// Waits for `DevToolsActivePort` in the profile and connects to the browser's
    /// websocket.
    fn connect(exe: &Path, process: &Process) -> WebSocket<TcpStream> {
        let file = process.dir.path().join("profile/DevToolsActivePort");
        let started = Instant::now();
        let (port, path) = loop {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                break (port.trim().to_string(), path.trim().to_string());
            }
            let log = std::fs::read_to_string(process.dir.path().join("chromium.log"))
                .unwrap_or_default();
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{} did not write {} within 30 s; its output:\n{log}",
                exe.display(),
                file.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let addr = format!("127.0.0.1:{port}");
        let stream = TcpStream::connect(&addr)
            .unwrap_or_else(|e| panic!("connect to Chromium's DevTools port {addr}: {e}"));
        stream
            .set_read_timeout(Some(CALL_TIMEOUT))
            .expect("set_read_timeout");
        let url = format!("ws://{addr}{path}");
        let (ws, _) = tungstenite::client(url.as_str(), stream)
            .unwrap_or_else(|e| panic!("websocket handshake with {url}: {e}"));
        // From now on reads wake up every 200 ms so that a call can time out.
        ws.get_ref()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("set_read_timeout");
        ws
    }

    /// Sends a command to the page session and returns its `result`; panics on a
    /// protocol error or after [`CALL_TIMEOUT`].
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// Sends a command to the browser target itself.
    fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(None, method, params)
    }

    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        match self.send_raw(session, method, params) {
            Ok(v) => v,
            Err((msg, err)) => panic!("{method} {msg} failed: {err}"),
        }
    }

    /// A command on the page target; Chromium's error answer as `Err((message, error))`.
    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, (Value, Value)> {
        let session = self.session.clone();
        self.send_raw(Some(&session), method, params)
    }

    fn send_raw(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, (Value, Value)> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .unwrap_or_else(|e| panic!("send {method} to Chromium: {e}"));
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            assert!(
                Instant::now() < deadline,
                "Chromium did not answer {method} within {CALL_TIMEOUT:?}"
            );
            let text = match self.ws.read() {
                Ok(Message::Text(t)) => t,
                Ok(_) => continue,
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    continue;
                }
                Err(e) => panic!("reading Chromium's answer to {method}: {e}"),
            };
            let reply: Value = serde_json::from_str(text.as_str())
                .unwrap_or_else(|e| panic!("Chromium sent bad JSON ({e}): {text}"));
            // Events (no id) and answers to other ids are skipped.
            if reply["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(err) = reply.get("error") {
                return Err((msg, err.clone()));
            }
            return Ok(reply["result"].clone());
        }
    }

    /// Evaluates `js` in the page (promises awaited) and returns its value as JSON;
    /// panics with the exception when the script throws.
    pub fn eval(&mut self, js: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(ex) = r.get("exceptionDetails") {
            let what = ex["exception"]["description"]
                .as_str()
                .or(ex["text"].as_str())
                .unwrap_or("an exception");
            panic!("the page threw while evaluating {js:?}: {what}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `condition` (a JS expression) until it is truthy and returns its value;
    /// panics after `timeout` with the page's URL and the start of its text.
    pub fn wait_for(&mut self, condition: &str, timeout: Duration) -> Value {
        let started = Instant::now();
        loop {
            // A navigation may destroy the context mid-evaluation ("Inspected target
            // navigated or closed", "Execution context was destroyed"): try again.
            let r = self
                .try_call(
                    "Runtime.evaluate",
                    json!({"expression": condition, "returnByValue": true}),
                )
                .unwrap_or_else(|_| json!({"exceptionDetails": "navigating"}));
            let value = r["result"]["value"].clone();
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if r.get("exceptionDetails").is_none() && truthy {
                return value;
            }
            if started.elapsed() > timeout {
                let page = self.call(
                    "Runtime.evaluate",
                    json!({"expression": "location.href + '\\n' + \
                        (document.body ? document.body.innerText.slice(0, 2000) : '(no body)')",
                        "returnByValue": true}),
                );
                panic!(
                    "waited {timeout:?} for `{condition}` in vain; the page:\n{}",
                    page["result"]["value"].as_str().unwrap_or("(unknown)")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Marks the current document, so that [`Browser::wait_for_new_document`] can tell
    /// a newly loaded one from it.
    fn mark_document(&mut self) {
        self.eval("window.__trawlOld = true");
    }

    /// Waits until a document loaded after [`Browser::mark_document`] is complete.
    fn wait_for_new_document(&mut self) {
        self.wait_for(
            "!window.__trawlOld && document.readyState === 'complete'",
            Duration::from_secs(30),
        );
    }

    /// Loads `url` and waits until the new document is complete; panics when the
    /// navigation fails (connection refused, ...).
    pub fn navigate(&mut self, url: &str) {
        self.mark_document();
        let r = self.call("Page.navigate", json!({"url": url}));
        if let Some(err) = r["errorText"].as_str() {
            panic!("navigating to {url} failed: {err}");
        }
        self.wait_for_new_document();
    }

    /// Clicks the first element matching `selector` (through JS), panicking when there
    /// is none.
    pub fn click(&mut self, selector: &str) {
        let sel = json!(selector);
        let found = self.eval(&format!(
            "(() => {{ const e = document.querySelector({sel}); if (!e) return false; \
             e.click(); return true; }})()"
        ));
        assert_eq!(
            found,
            json!(true),
            "no element matches {selector:?} to click"
        );
    }

    /// Clicks `selector` and waits for the document it leads to.
    pub fn click_and_wait(&mut self, selector: &str) {
        self.mark_document();
        self.click(selector);
        self.wait_for_new_document();
    }

    /// Focuses the element matching `selector`, clears it and types `text` into it
    /// (Input.insertText, as the keyboard would).
    pub fn type_into(&mut self, selector: &str, text: &str) {
        let sel = json!(selector);
        let found = self.eval(&format!(
            "(() => {{ const e = document.querySelector({sel}); if (!e) return false; \
             e.focus(); e.value = ''; return document.activeElement === e; }})()"
        ));
        assert_eq!(
            found,
            json!(true),
            "no focusable element matches {selector:?}"
        );
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Saves a PNG screenshot of the whole page (not only the window) to `path`,
    /// creating its directory.
    pub fn screenshot(&mut self, path: &Path) {
        let metrics = self.call("Page.getLayoutMetrics", json!({}));
        let size = &metrics["cssContentSize"];
        let width = size["width"].as_f64().unwrap_or(1200.0).max(1.0);
        let height = size["height"].as_f64().unwrap_or(900.0).max(1.0);
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}),
        );
        let data = shot["data"]
            .as_str()
            .expect("Page.captureScreenshot returned no data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("Page.captureScreenshot returned bad base64");
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// The Chromium process and its directory: on drop the process group is killed and
/// the profile removed.
struct Process {
    child: Child,
    /// Holds the profile (`profile/`) and Chromium's output (`chromium.log`).
    dir: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The whole group: renderers and helpers too.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ask politely (Chromium flushes and exits); Process::drop waits, then kills.
        self.next_id += 1;
        let close = json!({"id": self.next_id, "method": "Browser.close"});
        let _ = self.ws.send(Message::text(close.to_string()));
        let _ = self.ws.flush();
    }
}
