//! The stepping page and the explorer driven as a student drives them: real clicks and
//! real key presses in headless Chromium, through chromedriver's WebDriver API (plain
//! HTTP, from `ureq`).
//!
//! - `check --out` writes the counterexample of `lamport --non-fifo`; its page is
//!   opened from `file://`, stepped with the arrow keys to the violation (the breaking
//!   step highlighted, the nodes' fields changing between steps), and `v` jumps there.
//! - `mutexlab explore` is started, three choices are clicked, the path is saved with
//!   the page's button, and `mutexlab replay` runs the saved file as processes and the
//!   auditor judges the file.
//!
//! Without `/usr/bin/chromedriver` the tests say so and pass, unless
//! `MUTEXLAB_REQUIRE_BROWSER=1` (CI installs it), where they fail. Every process
//! started (chromedriver and the browsers it starts, the explorer) is in a process
//! group of its own and killed and reaped on drop, however the test ends. Waits poll
//! the page's own `#rendered` counts up to a deadline, never a fixed sleep.

use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::common::{mutexlab, skipped, stderr, stdout, HEADLESS, PATIENCE};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// The W3C name of an element reference in WebDriver's answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn driver_present() -> bool {
    if Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists() {
        return true;
    }
    let required = std::env::var("MUTEXLAB_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    assert!(!required, "MUTEXLAB_REQUIRE_BROWSER=1 but {CHROMEDRIVER} or {CHROMIUM} is absent");
    skipped(&format!(
        "the explorer test: {CHROMEDRIVER} is absent (set MUTEXLAB_REQUIRE_BROWSER=1 to require it)"
    ));
    false
}

/// A child in a process group of its own, killed with its group and reaped on drop.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// The first line `child` writes on stdout that `pick` takes, within [`PATIENCE`].
fn first_line(child: &mut Child, pick: impl Fn(&str) -> Option<String> + Send + 'static) -> String {
    let out = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(v) = pick(&line) {
                let _ = tx.send(v);
                return;
            }
        }
    });
    rx.recv_timeout(PATIENCE).expect("the line came within the patience")
}

/// A WebDriver session in headless Chromium, its chromedriver in a group of its own.
struct Session {
    base: String,
    _driver: Group,
    _profile: tempfile::TempDir,
}

impl Session {
    fn start() -> Session {
        let mut cmd = Command::new(CHROMEDRIVER);
        cmd.arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let mut driver = Group(cmd.spawn().expect("chromedriver starts"));
        let port = first_line(&mut driver.0, |l| {
            l.split("started successfully on port ").nth(1).map(|p| p.trim_end_matches('.').to_string())
        });
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = HEADLESS.iter().map(|a| a.to_string()).collect();
        args.push("--window-size=1400,900".into());
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
        }}});
        let root = format!("http://127.0.0.1:{port}");
        let answer = post(&format!("{root}/session"), &caps);
        let id = answer["value"]["sessionId"].as_str().expect("a session id").to_string();
        Session { base: format!("{root}/session/{id}"), _driver: driver, _profile: profile }
    }

    fn go(&self, url: &str) {
        post(&format!("{}/url", self.base), &json!({ "url": url }));
    }

    /// Run `script` in the page and give what it returns.
    fn eval(&self, script: &str) -> Value {
        post(&format!("{}/execute/sync", self.base), &json!({"script": script, "args": []}))["value"].clone()
    }

    /// Click the element `css` finds, as a mouse does.
    fn click(&self, css: &str) {
        let found = post(&format!("{}/element", self.base), &json!({"using": "css selector", "value": css}));
        let id = found["value"][ELEMENT].as_str().unwrap_or_else(|| panic!("no {css}: {found}"));
        post(&format!("{}/element/{id}/click", self.base), &json!({}));
    }

    /// Press and release `key` (a WebDriver key code such as "\u{E014}", ArrowRight).
    fn press(&self, key: &str) {
        let actions = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}
        ]}]});
        post(&format!("{}/actions", self.base), &actions);
    }

    /// `#rendered`'s `data-NAME`, as the page's script last wrote it.
    fn rendered(&self, name: &str) -> Option<String> {
        let v = self.eval(&format!(
            "var r = document.getElementById('rendered'); return r ? r.getAttribute('data-{name}') : null;"
        ));
        v.as_str().map(str::to_string)
    }

    /// Wait until `data-NAME` reads `want`, or fail with what it read.
    fn until(&self, name: &str, want: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got = self.rendered(name);
            if got.as_deref() == Some(want) {
                return;
            }
            assert!(Instant::now() < deadline, "#rendered data-{name} is {got:?}, never {want:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = ureq::delete(&self.base).call();
    }
}

fn post(url: &str, body: &Value) -> Value {
    let mut answer = ureq::post(url).send_json(body).unwrap_or_else(|e| panic!("POST {url}: {e}"));
    answer.body_mut().read_json::<Value>().unwrap_or_else(|e| panic!("POST {url}: {e}"))
}

const ARROW_RIGHT: &str = "\u{E014}";
const ARROW_LEFT: &str = "\u{E012}";

#[test]
fn the_counterexample_page_steps_by_keyboard_to_the_overtaken_request_s_violation() {
    if !driver_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cex");
    let out = crate::common::check_out(&["--algo", "lamport", "-n", "2", "--non-fifo"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("steps.html"), "check names the page: {}", stderr(&out));
    let page = dir.join("steps.html");
    let s = Session::start();
    s.go(&format!("file://{}", page.display()));
    s.until("selected", "0");
    let steps: usize = s.rendered("steps").unwrap().parse().unwrap();
    let breaking = s.rendered("breaking").unwrap();
    assert_eq!(steps, 5, "the start and the 4 steps check prints");
    assert_eq!(breaking, "4", "the fourth step breaks mutual exclusion");
    // Step by step with the arrow key: each step changes some node's fields, and only
    // the last is the breaking one.
    for k in 1..steps {
        s.press(ARROW_RIGHT);
        s.until("selected", &k.to_string());
        let changed: usize = s.rendered("changed").unwrap().parse().unwrap();
        assert!(changed > 0, "step {k} changed no field");
        let red = s.rendered("selected-breaking").unwrap();
        assert_eq!(red == "1", k == steps - 1, "step {k} breaking: {red}");
    }
    // Its words are check's own: w1 enters at the breaking step.
    let words = s.eval("return document.querySelector('#steps li.selected').textContent");
    assert!(words.as_str().unwrap().contains("w1 enters the critical section"), "{words}");
    // The overtaken REQUEST is drawn whole: an arrow per message sent.
    let arrows: usize = s.rendered("arrows").unwrap().parse().unwrap();
    assert!(arrows >= 3, "{arrows} arrows");
    s.press(ARROW_LEFT);
    s.until("selected", "3");
    s.press("\u{E011}"); // Home
    s.until("selected", "0");
    s.press("v");
    s.until("selected", "4");
}

#[test]
fn three_clicks_in_the_explorer_save_a_path_that_replay_runs_as_processes() {
    if !driver_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let saves = tmp.path().join("saves");
    let mut cmd = mutexlab();
    cmd.args(["explore", "--algo", "ricart-agrawala", "-n", "2", "--json", "--out"])
        .arg(&saves)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    let mut explorer = Group(cmd.spawn().expect("mutexlab explore starts"));
    let said = first_line(&mut explorer.0, |l| serde_json::from_str::<Value>(l).ok().map(|v| v.to_string()));
    let said: Value = serde_json::from_str(&said).unwrap();
    let url = said["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:") && url.contains("token="), "{url}");
    // Without the token, nothing is served.
    let bare = url.split('?').next().unwrap();
    assert!(ureq::get(&format!("{bare}api/walk?path=")).call().is_err(), "served without the token");

    let s = Session::start();
    s.go(url);
    s.until("steps", "1");
    for k in 1..=3 {
        s.click(".choice[data-index=\"0\"]");
        s.until("steps", &(k + 1).to_string());
    }
    s.until("path", "0,0,0");
    s.click("#save");
    let deadline = Instant::now() + PATIENCE;
    let replay = loop {
        let said = s.eval("return document.getElementById('explore-result').textContent");
        if let Some(cmd) = said.as_str().and_then(|t| t.split("run it as processes: ").nth(1)) {
            break cmd.trim().to_string();
        }
        assert!(Instant::now() < deadline, "the page never said where it saved: {said}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let saved = saves.join("path-1");
    assert_eq!(replay, format!("mutexlab replay {}", saved.canonicalize().unwrap().display()));
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(saved.join("counterexample.json")).unwrap()).unwrap();
    assert_eq!(file["choices"].as_array().unwrap().len(), 3, "{file}");
    drop(s);
    drop(explorer);

    // The saved path as real processes: three steps, then the replay finishes the run
    // and the auditor judges the file: Ricart-Agrawala keeps mutual exclusion.
    let out = crate::common::run(&["replay", saved.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let r: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(r["ok"], true, "{r}");
}
