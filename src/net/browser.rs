//! Headless Chromium driven over the Chrome DevTools Protocol (CDP): the browser of
//! `[fetch.render]`.
//!
//! [`Browser::launch`] starts Debian's `chromium --headless` with a new empty
//! profile, reads the port it chose from `<profile>/DevToolsActivePort` and opens
//! one websocket on loopback (`tokio-tungstenite`). One task writes the commands, one
//! reads: an answer goes to the command with its id, an event to the page session
//! it belongs to. [`Browser::new_page`] opens a tab attached as a flattened session;
//! [`Page`] sends commands and receives its events. Dropping the browser kills its
//! process group (renderers included) and removes the profile.
//!
//! Chromium itself opens no connection: its resolver answers "not found" for every
//! name and its proxy is a closed port on loopback, so a request only succeeds when
//! the caller answers it (`Fetch.requestPaused` → `Fetch.fulfillRequest`); the
//! fetcher answers them with its own, polite HTTP client.
//!
//! Only the dozen commands the renderer needs are used, as JSON; a typed CDP crate
//! (chromiumoxide: hundreds of thousands of generated lines) would add minutes to
//! every build for them.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The shell around Chromium (`$0` is Chromium, `$@` its arguments): Chromium in the
/// background with no input; a watchdog that kills the whole process group once its
/// standard input (a pipe from the fetch process, kept as descriptor 3: a background
/// job's own standard input is /dev/null) reaches its end; the shell waits for
/// Chromium and exits with its status.
const WATCHDOG: &str = "exec 3<&0; \"$0\" \"$@\" </dev/null 3<&- & c=$!; (cat <&3 >/dev/null; kill -s KILL 0) & exec 3<&-; wait $c";

/// The largest DevTools message read (a serialized DOM, a response body in base64).
const MAX_MESSAGE: usize = 512 << 20;

/// How long Chromium may take to start and open its DevTools port.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong with the browser.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium binary was found.
    #[error(
        "headless Chromium not found (looked at fetch.render.chromium, $TRAWL_CHROMIUM, /usr/bin/chromium and chromium on PATH): install Debian's package (`apt-get install -y chromium`, or `make chromium`) or set fetch.render.chromium"
    )]
    Missing,
    /// Chromium did not start or did not open its DevTools port.
    #[error("{exe}: {message}")]
    Start {
        /// The binary.
        exe: PathBuf,
        /// What happened, with Chromium's own output when there is some.
        message: String,
    },
    /// The DevTools connection is gone (Chromium exited or crashed).
    #[error("the connection to Chromium is closed")]
    Closed,
    /// A command got an error answer.
    #[error("{method}: {message}")]
    Command {
        /// The command.
        method: String,
        /// Chromium's error.
        message: String,
    },
}

/// The Chromium binary: `configured` when not empty, else `$TRAWL_CHROMIUM`,
/// `/usr/bin/chromium`, or `chromium` / `chromium-browser` on PATH.
pub fn chromium_path(configured: &Path) -> Option<PathBuf> {
    if !configured.as_os_str().is_empty() {
        return Some(configured.to_path_buf()).filter(|p| p.is_file());
    }
    if let Some(p) = std::env::var_os("TRAWL_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let fixed = PathBuf::from("/usr/bin/chromium");
    if fixed.is_file() {
        return Some(fixed);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
        .find(|p| p.is_file())
}

/// The flags every headless Chromium of the project runs with (the renderer's, the
/// tests' browser driver's): headless, nothing running in the background (updates,
/// sync, metrics upload, QUIC), DevTools on a loopback port of its choosing.
pub const HEADLESS_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--metrics-recording-only",
    "--password-store=basic",
    "--mute-audio",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
];

/// The renderer's command line: [`HEADLESS_FLAGS`], a fresh profile, no name
/// resolution, a dead proxy and no WebRTC (see the module docs), cross-site frames in
/// the page's process (where their requests pause).
fn chromium_args(profile: &Path) -> Vec<String> {
    let own = [
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--disable-site-isolation-trials",
        "--disable-features=IsolateOrigins,site-per-process",
        "--window-size=1280,1024",
    ];
    let mut args: Vec<String> = HEADLESS_FLAGS
        .iter()
        .chain(own.iter())
        .map(|s| s.to_string())
        .collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push("about:blank".into());
    args
}

/// One CDP event: its method and parameters.
#[derive(Debug, Clone)]
pub struct Event {
    /// `Fetch.requestPaused`, `Page.loadEventFired`, ...
    pub method: String,
    /// Its parameters.
    pub params: Value,
}

type Reply = Result<Value, BrowserError>;

/// The connection's state shared by the reader task and the callers.
struct Conn {
    out: mpsc::UnboundedSender<Message>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (String, oneshot::Sender<Reply>)>>,
    sessions: Mutex<HashMap<String, mpsc::UnboundedSender<Event>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Conn {
    /// Sends a command; the receiver gets its answer (or `Closed`).
    fn send(&self, session: Option<&str>, method: &str, params: Value) -> oneshot::Receiver<Reply> {
        let (tx, rx) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        lock(&self.pending).insert(id, (method.to_string(), tx));
        if self.out.send(Message::text(msg.to_string())).is_err() {
            // The writer is gone: the sender just stored is dropped with the map entry.
            lock(&self.pending).remove(&id);
        }
        rx
    }

    async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Reply {
        self.send(session, method, params)
            .await
            .unwrap_or(Err(BrowserError::Closed))
    }

    /// Routes one message from Chromium.
    fn dispatch(&self, text: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(text) else {
            tracing::debug!("Chromium sent a message that is not JSON: {text:.200}");
            return;
        };
        if let Some(id) = msg.get("id").and_then(Value::as_u64) {
            let Some((method, tx)) = lock(&self.pending).remove(&id) else {
                return;
            };
            let reply = match msg.get("error") {
                Some(e) => Err(BrowserError::Command {
                    method,
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string(),
                }),
                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(reply);
            return;
        }
        let (Some(method), Some(session)) = (
            msg.get("method").and_then(Value::as_str),
            msg.get("sessionId").and_then(Value::as_str),
        ) else {
            return;
        };
        if let Some(tx) = lock(&self.sessions).get(session) {
            let _ = tx.send(Event {
                method: method.to_string(),
                params: msg.get("params").cloned().unwrap_or(Value::Null),
            });
        }
    }

    /// Ends every call waiting for an answer (the connection is gone).
    fn close(&self) {
        lock(&self.pending).clear();
        lock(&self.sessions).clear();
    }
}

/// A running headless Chromium; dropping it kills it and removes its profile.
pub struct Browser {
    conn: Arc<Conn>,
    process: Process,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Browser {
    /// Starts `exe` and connects to it. Must run inside the tokio runtime.
    pub async fn launch(exe: &Path) -> Result<Browser, BrowserError> {
        let start = |message: String| BrowserError::Start {
            exe: exe.to_path_buf(),
            message,
        };
        let dir = tempfile::Builder::new()
            .prefix("trawl-chromium-")
            .tempdir()
            .map_err(|e| start(format!("cannot create a profile directory: {e}")))?;
        let profile = dir.path().join("profile");
        std::fs::create_dir(&profile)
            .map_err(|e| start(format!("cannot create {}: {e}", profile.display())))?;
        let log_path = dir.path().join("chromium.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| start(format!("cannot create {}: {e}", log_path.display())))?;
        let log2 = log
            .try_clone()
            .map_err(|e| start(format!("{}: {e}", log_path.display())))?;
        // Chromium runs under a shell that watches this process: its standard input
        // is a pipe from here, and when the pipe closes (this process ended, however
        // it ended, even SIGKILL) the watchdog kills the process group, so no
        // Chromium outlives the fetch. The shell exits with Chromium.
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg(exe)
            .args(chromium_args(&profile))
            .stdin(Stdio::piped())
            .stdout(log2)
            .stderr(log)
            // Its own process group: the renderers and helpers are killed with it.
            .process_group(0)
            .spawn()
            .map_err(|e| start(format!("cannot start /bin/sh to run it: {e}")))?;
        let lifeline = child.stdin.take();
        let mut process = Process {
            child,
            dir,
            _lifeline: lifeline,
        };
        let ws_url = process.devtools_url().await.map_err(start)?;
        // A page's DOM (and a fulfilled body, base64) can be tens of MB in one message.
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (ws, _) =
            tokio_tungstenite::connect_async_with_config(ws_url.as_str(), Some(config), true)
                .await
                .map_err(|e| start(format!("websocket handshake with {ws_url}: {e}")))?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut rx) = mpsc::unbounded_channel::<Message>();
        let conn = Arc::new(Conn {
            out,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
        });
        let writer = tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if sink.send(m).await.is_err() {
                    break;
                }
            }
        });
        let reader_conn = conn.clone();
        let reader = tokio::spawn(async move {
            while let Some(Ok(m)) = stream.next().await {
                if let Message::Text(t) = m {
                    reader_conn.dispatch(t.as_str());
                }
            }
            reader_conn.close();
        });
        Ok(Browser {
            conn,
            process,
            tasks: [writer, reader],
        })
    }

    /// Whether the connection to Chromium is gone (it exited or crashed).
    pub fn is_closed(&self) -> bool {
        self.tasks[1].is_finished()
    }

    /// Opens a new blank tab and attaches to it.
    pub async fn new_page(&self) -> Result<Page, BrowserError> {
        let target = self
            .conn
            .call(None, "Target.createTarget", json!({"url": "about:blank"}))
            .await?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_string();
        let attached = self
            .conn
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
            )
            .await?;
        let Some(session) = attached["sessionId"].as_str().map(str::to_string) else {
            drop(
                self.conn
                    .send(None, "Target.closeTarget", json!({"targetId": target_id})),
            );
            return Err(BrowserError::Command {
                method: "Target.attachToTarget".into(),
                message: format!("no sessionId in {attached}"),
            });
        };
        let (tx, events) = mpsc::unbounded_channel();
        lock(&self.conn.sessions).insert(session.clone(), tx);
        Ok(Page {
            conn: self.conn.clone(),
            session,
            target_id,
            events,
        })
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Its profile is thrown away: nothing to flush, the group is killed at once.
        for t in &self.tasks {
            t.abort();
        }
        self.process.kill();
    }
}

/// One tab: commands go to its session, its events come in order.
pub struct Page {
    conn: Arc<Conn>,
    session: String,
    target_id: String,
    events: mpsc::UnboundedReceiver<Event>,
}

impl Page {
    /// Sends a command and waits for its answer.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.conn.call(Some(&self.session), method, params).await
    }

    /// Sends a command without waiting: the receiver gets the answer.
    pub fn send(&self, method: &str, params: Value) -> oneshot::Receiver<Reply> {
        self.conn.send(Some(&self.session), method, params)
    }

    /// Sends a command whose answer nobody waits for.
    pub fn post(&self, method: &str, params: Value) {
        drop(self.send(method, params));
    }

    /// The next event of this tab; `None` when the connection is gone.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }
}

impl Drop for Page {
    /// Closes the tab (its renderer too, even one stuck in a script), also when the
    /// render using it was cut.
    fn drop(&mut self) {
        lock(&self.conn.sessions).remove(&self.session);
        drop(self.conn.send(
            None,
            "Target.closeTarget",
            json!({"targetId": self.target_id}),
        ));
    }
}

/// The Chromium process and its profile directory.
struct Process {
    child: Child,
    dir: tempfile::TempDir,
    /// The write end of the watchdog's pipe (see [`WATCHDOG`]).
    _lifeline: Option<std::process::ChildStdin>,
}

impl Process {
    /// Waits for `DevToolsActivePort` and returns the browser's websocket URL.
    async fn devtools_url(&mut self) -> Result<String, String> {
        let file = self.dir.path().join("profile/DevToolsActivePort");
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                return Ok(format!("ws://127.0.0.1:{}{}", port.trim(), path.trim()));
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || started.elapsed() > START_TIMEOUT {
                let log = std::fs::read_to_string(self.dir.path().join("chromium.log"))
                    .unwrap_or_default();
                let tail: String = log.lines().rev().take(20).collect::<Vec<_>>().join("\n");
                return Err(match exited {
                    Some(status) => format!("exited at start ({status}); its output:\n{tail}"),
                    None => format!(
                        "did not open its DevTools port within {START_TIMEOUT:?}; its output:\n{tail}"
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills the whole process group and reaps the browser.
    fn kill(&mut self) {
        if let Some(pid) = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
