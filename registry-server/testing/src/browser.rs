//! Headless Chromium (Debian's), driven over the DevTools protocol: load a page,
//! wait for its load event, read what it shows, collect every console error,
//! uncaught exception and failed load, and take screenshots. A real browser,
//! because what a test asserts about a page should be what a person sees.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use rustix::process::Signal;
use serde_json::{Value, json};

use crate::spawn::{scratch_dir, spawn_guarded, stop_child, tail};
use crate::{Error, Result, io};

/// How long one protocol command or page load may take (TCG-slow machines
/// included).
const TIMEOUT: Duration = Duration::from_secs(60);

/// A page as loaded.
#[derive(Debug, Clone)]
pub struct Visit {
    pub status: Option<u64>,
    pub title: String,
    /// `document.body.innerText`: the text a person reads.
    pub text: String,
    /// Console errors, uncaught exceptions and failed loads, one line each.
    pub problems: Vec<String>,
}

/// A browser with one tab, stopped (SIGKILL after a grace period) on drop.
pub struct Browser {
    child: Child,
    socket: tungstenite::WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Events read while waiting for a command's answer, not yet looked at.
    events: Vec<Value>,
    log: PathBuf,
    _dir: PathBuf,
}

fn browser_error(what: impl Into<String>) -> Error {
    Error::Command { what: "headless chromium".into(), output: what.into() }
}

/// `EBPKG_TEST_CHROMIUM`, else Debian's binary (not its wrapper script, whose
/// memory check misparses large machines), else `chromium` on PATH.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("EBPKG_TEST_CHROMIUM") {
        return path.into();
    }
    let debian = Path::new("/usr/lib/chromium/chromium");
    if debian.exists() { debian.to_owned() } else { "chromium".into() }
}

impl Browser {
    pub fn launch() -> Result<Browser> {
        let dir = scratch_dir("chromium")?;
        let profile = dir.join("profile");
        let log = dir.join("chromium.log");
        let log_file = std::fs::File::create(&log).map_err(io(format!("creating {}", log.display())))?;
        let log_err = log_file.try_clone().map_err(io("duplicating the log file"))?;
        let mut command = Command::new(chromium());
        command
            .args([
                "--headless=new",
                // Root cannot use the sandbox; the pages are our own.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--mute-audio",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_err);
        let mut child = spawn_guarded(command, Signal::KILL, "chromium")?;
        // Chromium writes the port it chose, then the browser's socket path.
        let port_file = profile.join("DevToolsActivePort");
        let start = Instant::now();
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break (port.trim().to_owned(), path.trim().to_owned());
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(Error::Exited { what: "chromium".into(), status, log: tail(&log) });
            }
            if start.elapsed() > TIMEOUT {
                stop_child(&mut child, Signal::KILL, Duration::ZERO);
                return Err(Error::NotReady { what: "chromium".into(), secs: TIMEOUT.as_secs(), log: tail(&log) });
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stream = TcpStream::connect(format!("127.0.0.1:{port}")).map_err(io("connecting to chromium"))?;
        stream.set_read_timeout(Some(TIMEOUT)).map_err(io("setting a read timeout"))?;
        let url = format!("ws://127.0.0.1:{port}{path}");
        let (socket, _) = tungstenite::client(url.as_str(), stream)
            .map_err(|e| browser_error(format!("the DevTools handshake at {url} failed: {e}")))?;
        let mut browser =
            Browser { child, socket, session: String::new(), next_id: 0, events: Vec::new(), log, _dir: dir };
        let target = browser.call(None, "Target.createTarget", json!({"url": "about:blank"}))?;
        let target = target["targetId"].as_str().unwrap_or_default().to_owned();
        let attached = browser.call(None, "Target.attachToTarget", json!({"targetId": target, "flatten": true}))?;
        browser.session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"] {
            browser.page_call(domain, json!({}))?;
        }
        Ok(browser)
    }

    /// Sets the viewport (CSS pixels); `mobile` also emulates a phone's
    /// viewport meta handling and touch.
    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) -> Result<()> {
        self.page_call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        )?;
        self.page_call("Emulation.setTouchEmulationEnabled", json!({"enabled": mobile}))?;
        Ok(())
    }

    /// Loads `url` and waits for its load event.
    pub fn visit(&mut self, url: &str) -> Result<Visit> {
        self.events.clear();
        let navigated = self.page_call("Page.navigate", json!({"url": url}))?;
        if let Some(error) = navigated["errorText"].as_str() {
            return Err(browser_error(format!("{url} did not load: {error}")));
        }
        self.wait_event("Page.loadEventFired")?;
        let title = self.eval("document.title")?.as_str().unwrap_or_default().to_owned();
        let text = self.eval("document.body ? document.body.innerText : ''")?.as_str().unwrap_or_default().to_owned();
        // Let late console messages (deferred scripts) arrive.
        self.drain(Duration::from_millis(200))?;
        let mut status = None;
        let mut problems = Vec::new();
        for event in &self.events {
            let params = &event["params"];
            match event["method"].as_str().unwrap_or_default() {
                "Network.responseReceived" if params["type"] == "Document" => {
                    status = params["response"]["status"].as_u64();
                }
                "Runtime.exceptionThrown" => {
                    problems.push(format!("uncaught exception: {}", params["exceptionDetails"]["text"]));
                }
                "Runtime.consoleAPICalled" if matches!(params["type"].as_str(), Some("error" | "assert")) => {
                    problems.push(format!("console.{}: {}", params["type"], params["args"]));
                }
                "Log.entryAdded" if params["entry"]["level"] == "error" => {
                    problems.push(format!("{}: {}", params["entry"]["source"], params["entry"]["text"]));
                }
                "Network.loadingFailed" => {
                    problems.push(format!("a load failed: {}", params["errorText"]));
                }
                _ => {}
            }
        }
        Ok(Visit { status, title, text, problems })
    }

    /// Evaluates a JavaScript expression in the page; its value, as JSON.
    pub fn eval(&mut self, expression: &str) -> Result<Value> {
        let result = self.page_call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}))?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(browser_error(format!("`{expression}` threw: {exception}")));
        }
        Ok(result["result"]["value"].clone())
    }

    /// Evaluates an expression whose value is a promise; what it resolves to.
    pub fn eval_await(&mut self, expression: &str) -> Result<Value> {
        let result = self.page_call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(exception) = result.get("exceptionDetails") {
            return Err(browser_error(format!("`{expression}` threw: {exception}")));
        }
        Ok(result["result"]["value"].clone())
    }

    /// WCAG 2 A and AA violations on the current page, by axe-core (the file
    /// `ci/setup` installs; `EBPKG_TEST_AXE` names another): one line each, with
    /// the elements concerned.
    pub fn accessibility_violations(&mut self) -> Result<Vec<String>> {
        let path =
            std::env::var_os("EBPKG_TEST_AXE").map_or_else(|| "/opt/ebpkg-ci/axe/axe.min.js".into(), PathBuf::from);
        let axe = std::fs::read_to_string(&path)
            .map_err(|e| Error::Missing(format!("axe-core at {} ({e})", path.display())))?;
        // Loaded into the page's world like a console snippet (the page's CSP
        // governs the page's own scripts, not the debugger's).
        self.eval(&format!("{axe}\n;true"))?;
        let found = self.eval_await(
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})\
             .then(r => r.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' — ' + \
             v.nodes.map(n => n.target.join(' ')).join(', ')))",
        )?;
        Ok(found
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect())
            .unwrap_or_default())
    }

    /// A PNG of the whole page (up to 10,000 CSS pixels tall) at the current width.
    pub fn screenshot(&mut self, path: &Path) -> Result<()> {
        let metrics = self.page_call("Page.getLayoutMetrics", json!({}))?;
        let width = metrics["cssContentSize"]["width"].as_f64().unwrap_or(1024.0);
        let height = metrics["cssContentSize"]["height"].as_f64().unwrap_or(768.0).min(10_000.0);
        let shot = self.page_call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}),
        )?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| browser_error(format!("the screenshot is not base64: {e}")))?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(format!("creating {}", parent.display())))?;
        }
        std::fs::write(path, png).map_err(io(format!("writing {}", path.display())))
    }

    fn page_call(&mut self, method: &str, params: Value) -> Result<Value> {
        let session = self.session.clone();
        self.call(Some(&session), method, params)
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(tungstenite::Message::text(message.to_string()))
            .map_err(|e| browser_error(format!("sending {method}: {e}; log: {}", tail(&self.log))))?;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.read(deadline, method)?;
            if message["id"].as_u64() == Some(id) {
                if let Some(error) = message.get("error") {
                    return Err(browser_error(format!("{method} failed: {error}")));
                }
                return Ok(message["result"].clone());
            }
            self.events.push(message);
        }
    }

    fn wait_event(&mut self, method: &str) -> Result<()> {
        let deadline = Instant::now() + TIMEOUT;
        if self.events.iter().any(|e| e["method"] == method) {
            return Ok(());
        }
        loop {
            let message = self.read(deadline, method)?;
            let done = message["method"] == method;
            self.events.push(message);
            if done {
                return Ok(());
            }
        }
    }

    /// Reads events for `window` (a read that times out ends it).
    fn drain(&mut self, window: Duration) -> Result<()> {
        self.socket.get_mut().set_read_timeout(Some(window)).map_err(io("setting a read timeout"))?;
        let end = Instant::now() + window;
        while Instant::now() < end {
            match self.socket.read() {
                Ok(tungstenite::Message::Text(text)) => {
                    if let Ok(value) = serde_json::from_str(text.as_str()) {
                        self.events.push(value);
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
                {
                    break;
                }
                Err(e) => return Err(browser_error(format!("reading events: {e}"))),
            }
        }
        self.socket.get_mut().set_read_timeout(Some(TIMEOUT)).map_err(io("setting a read timeout"))
    }

    fn read(&mut self, deadline: Instant, waiting_for: &str) -> Result<Value> {
        loop {
            if Instant::now() > deadline {
                return Err(browser_error(format!("no answer to {waiting_for} within {} s", TIMEOUT.as_secs())));
            }
            match self.socket.read() {
                Ok(tungstenite::Message::Text(text)) => {
                    return serde_json::from_str(text.as_str())
                        .map_err(|e| browser_error(format!("a DevTools message is not JSON: {e}")));
                }
                Ok(_) => continue,
                Err(e) => {
                    return Err(browser_error(format!("waiting for {waiting_for}: {e}; log: {}", tail(&self.log))));
                }
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        stop_child(&mut self.child, Signal::TERM, Duration::from_secs(2));
    }
}
