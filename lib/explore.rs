//! `mutexlab explore`: the stepping page served on 127.0.0.1 over the checker's world,
//! where a student chooses what happens next.
//!
//! The page is the counterexample page's own ([`crate::html::step_page`]) in explore
//! mode; this module answers its requests. A path is the list of indices into what was
//! enabled at each step, from the initial world (as Stateright's explorer follows a
//! path of fingerprints): each request walks it again through the same node code
//! ([`crate::check::walk`]), so the server keeps no state but the saves it made.
//!
//! - `GET /?token=T`: the page.
//! - `GET /api/walk?token=T&path=I,J,K`: the walk along the path, with what can happen
//!   next.
//! - `GET /api/check?token=T&path=…`: a search from the path's end (the check's own
//!   options and limits); a violation found comes back as a whole path to load.
//! - `POST /api/save?token=T&path=…`: the path as a counterexample file, which
//!   `mutexlab replay` runs as real processes.
//!
//! Only 127.0.0.1 is listened on, and every request must carry the token printed with
//! the address, in its query or in the cookie the page's own request set (`SameSite=
//! Strict`, so the page's calls carry it and no other site's do): another user of the
//! machine, or a web page in the browser, cannot drive it or make it write files. Requests are served one at a time; SIGINT or
//! SIGTERM ends it (a search under way stops at its next poll).

use std::path::{Path as FsPath, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::check::walk::{Route, Walk, MAX_STEPS};
use crate::check::CheckOpts;
use crate::counterexample::CounterexampleFile;
use crate::registry::AlgoInfo;

/// What the explorer explores, and where it saves.
pub struct Explorer {
    /// The algorithm.
    pub info: &'static AlgoInfo,
    /// The world's knobs and the search's limits (`check`'s options).
    pub opts: CheckOpts,
    /// Where saved paths go: `DIR/path-1`, `DIR/path-2`…
    pub save_to: PathBuf,
    /// The token every request must carry.
    pub token: String,
    /// Paths saved so far.
    saved: u32,
}

/// The cookie that carries the token for the page's own requests.
const COOKIE: &str = "mutexlab_explore";

/// A reply: status, content type, body.
type Reply = (u16, &'static str, String);

/// The longest request line taken: a path of [`MAX_STEPS`] indices fits.
const MAX_URL: usize = 16 * MAX_STEPS + 256;

impl Explorer {
    /// An explorer of `info` under `opts`, saving into `save_to`, with a fresh token.
    pub fn new(info: &'static AlgoInfo, opts: CheckOpts, save_to: PathBuf) -> Result<Explorer, String> {
        let bytes =
            crate::auth::random_bytes::<16>().map_err(|e| format!("no randomness for the token: {e}"))?;
        let token = crate::auth::hex(&bytes);
        Ok(Explorer { info, opts, save_to, token, saved: 0 })
    }

    /// Listen on 127.0.0.1:`port` (0: any free port), tell `ready` the page's address,
    /// and serve until a signal comes.
    pub fn serve(&mut self, port: u16, ready: &mut dyn FnMut(&str)) -> Result<(), String> {
        let server = tiny_http::Server::http(("127.0.0.1", port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let addr = server.server_addr().to_ip().ok_or("the server has no IP address")?;
        ready(&format!("http://{addr}/?token={}", self.token));
        while !crate::interrupt::requested() {
            let request = match server.recv_timeout(Duration::from_millis(200)) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => return Err(format!("the server failed: {e}")),
            };
            let post = *request.method() == tiny_http::Method::Post;
            let cookie = request
                .headers()
                .iter()
                .find(|h| h.field.equiv("Cookie"))
                .map(|h| h.value.as_str().to_string());
            let (status, kind, body) = self.answer(request.url(), post, cookie.as_deref());
            let header = |k: &str, v: &str| tiny_http::Header::from_bytes(k, v).expect("a valid header");
            let mut response = tiny_http::Response::from_string(body)
                .with_status_code(status)
                .with_header(header("Content-Type", kind))
                .with_header(header("Cache-Control", "no-store"));
            if kind.starts_with("text/html") && status == 200 {
                let cookie = format!("{COOKIE}={}; Path=/; SameSite=Strict; HttpOnly", self.token);
                response = response.with_header(header("Set-Cookie", &cookie));
            }
            // A browser that went away is no reason to stop.
            let _ = request.respond(response);
        }
        Ok(())
    }

    /// The reply to a request for `url` (a POST when `post`) with the `Cookie` header
    /// `cookie`.
    pub fn answer(&mut self, url: &str, post: bool, cookie: Option<&str>) -> Reply {
        if url.len() > MAX_URL {
            return error(
                414,
                format!("a request of {} bytes is longer than the {MAX_URL} taken", url.len()),
            );
        }
        let (route, query) = url.split_once('?').unwrap_or((url, ""));
        let param = |name: &str| {
            query.split('&').find_map(|kv| kv.split_once('=').filter(|(k, _)| *k == name).map(|(_, v)| v))
        };
        let from_cookie = cookie.is_some_and(|c| {
            c.split(';')
                .filter_map(|kv| kv.trim().split_once('='))
                .any(|(k, v)| k == COOKIE && v == self.token)
        });
        if param("token") != Some(self.token.as_str()) && !from_cookie {
            return error(403, "this explorer answers only requests that carry its token".into());
        }
        let path = match parse_path(param("path").unwrap_or("")) {
            Ok(p) => p,
            Err(e) => return error(400, e),
        };
        match (route, post) {
            ("/", false) => (200, "text/html; charset=utf-8", self.page()),
            ("/api/walk", false) => match self.walk(&Route::Indices(path)) {
                Ok(w) => ok(serde_json::to_value(&w).unwrap_or(Value::Null)),
                Err(e) => error(400, e),
            },
            ("/api/check", false) => self.check_from(path),
            ("/api/save", true) => self.save(path),
            ("/api/save", false) => error(405, "save with POST".into()),
            _ => error(404, format!("no such page: {route}")),
        }
    }

    fn page(&self) -> String {
        let title = format!("explore {} -n {}", self.info.name, self.opts.n);
        crate::html::step_page(&title, None, crate::html::PageMode::Explore)
    }

    fn walk(&self, route: &Route) -> Result<Walk, String> {
        let mut w = (self.info.walk)(&self.opts, route)?;
        w.algorithm = self.info.name.to_string();
        Ok(w)
    }

    /// A search from the end of `path`: the check's own, bounded by its limits.
    fn check_from(&self, path: Vec<u32>) -> Reply {
        let here = match self.walk(&Route::Indices(path)) {
            Ok(w) => w,
            Err(e) => return error(400, e),
        };
        if here.violation_step.is_some() {
            return error(
                400,
                "this path already breaks a property; go back a step to search from there".into(),
            );
        }
        let opts = CheckOpts { from: here.choices.clone(), ..self.opts.clone() };
        let r = (self.info.check)(&opts, &mut |_| {});
        let covered = format!("{} states, {:.1} s", r.states, r.seconds);
        match &r.violation {
            Some(v) => match self.walk(&Route::Choices(v.choices.clone())) {
                Ok(w) => ok(json!({
                    "found": true,
                    "path": w.path,
                    "summary": format!("{} in {} more steps ({covered})", v.headline(), v.choices.len() - here.choices.len()),
                })),
                Err(e) => error(500, format!("the search's counterexample does not walk: {e}")),
            },
            None => {
                let summary = match &r.cut_short {
                    Some(why) => {
                        format!("no violation found, but the search was cut short ({why}): {covered}")
                    }
                    None => format!("no violation reachable from here: {covered}"),
                };
                ok(json!({ "found": false, "summary": summary }))
            }
        }
    }

    /// Save `path` as `DIR/path-K/counterexample.json`.
    fn save(&mut self, path: Vec<u32>) -> Reply {
        let w = match self.walk(&Route::Indices(path)) {
            Ok(w) => w,
            Err(e) => return error(400, e),
        };
        let file = counterexample_of(self.info, &self.opts, &w, "a path built in the explorer");
        let dir = self.free_dir();
        match file.write(&dir) {
            Ok(written) => {
                self.saved += 1;
                let abs = std::fs::canonicalize(&dir).unwrap_or(dir);
                ok(json!({
                    "file": absolute(&written).display().to_string(),
                    "replay": format!("mutexlab replay {}", abs.display()),
                    "steps": w.choices.len(),
                }))
            }
            Err(e) => error(500, e),
        }
    }

    /// The next `path-K` under the save directory that does not exist yet.
    fn free_dir(&self) -> PathBuf {
        (self.saved + 1..)
            .map(|k| self.save_to.join(format!("path-{k}")))
            .find(|d| !d.exists())
            .expect("some name is free")
    }
}

/// The file a counterexample's stepping page is written to, beside the counterexample.
pub const STEPS_PAGE: &str = "steps.html";

/// Write the stepping page of `choices` (a counterexample of `info` under `opts`) as
/// `dir/steps.html`, self-contained, and give its path.
pub fn write_steps_page(
    info: &AlgoInfo,
    opts: &CheckOpts,
    choices: &[crate::sim::Choice],
    dir: &FsPath,
) -> Result<PathBuf, String> {
    write_lasso_page(info, opts, choices, None, dir)
}

/// [`write_steps_page`], or for a lasso (`lasso`: where its cycle starts, from 0, the
/// property and the failure): the choices from there on are a cycle that repeats for
/// ever, and the page marks where it begins.
pub fn write_lasso_page(
    info: &AlgoInfo,
    opts: &CheckOpts,
    choices: &[crate::sim::Choice],
    lasso: Option<(usize, &str, &str)>,
    dir: &FsPath,
) -> Result<PathBuf, String> {
    // A lasso was found without a timer budget (the fair-cycle pass has none): walk it
    // without one, or its timers past the budget could not fire.
    let free;
    let opts = match lasso {
        Some(_) => {
            free = CheckOpts { timer_fires: None, ..opts.clone() };
            &free
        }
        None => opts,
    };
    let mut w = (info.walk)(opts, &Route::Choices(choices.to_vec()))?;
    // The walk numbers the start 0 and the choices from 1; it judges no cycle, so the
    // lasso's property and failure are the caller's.
    if let Some((c, property, failure)) = lasso {
        w.cycle_step = Some(c + 1);
        w.property.get_or_insert_with(|| property.to_string());
        w.failure.get_or_insert_with(|| failure.to_string());
    }
    steps_page(info, opts, w, dir)
}

/// Write a path found by another driver (a failing simulator seed) as `check --out`
/// writes a counterexample: `counterexample.json`, which `mutexlab replay` runs as real
/// processes, and its stepping page; give the page's path. `failure` is what that
/// driver saw, for when no property the walk judges names it (a livelock, say).
pub fn write_path(
    info: &AlgoInfo,
    opts: &CheckOpts,
    choices: &[crate::sim::Choice],
    failure: &str,
    dir: &FsPath,
) -> Result<PathBuf, String> {
    let mut w = (info.walk)(opts, &Route::Choices(choices.to_vec()))?;
    if w.failure.is_none() {
        w.failure = Some(failure.to_string());
    }
    counterexample_of(info, opts, &w, failure).write(dir)?;
    steps_page(info, opts, w, dir)
}

/// The counterexample file of a walk; `failure` when the walk broke nothing.
fn counterexample_of(info: &AlgoInfo, opts: &CheckOpts, w: &Walk, failure: &str) -> CounterexampleFile {
    CounterexampleFile {
        schema: crate::counterexample::SCHEMA,
        algorithm: info.name.to_string(),
        opts: opts.clone(),
        property: w.property.clone().unwrap_or_default(),
        failure: w.failure.clone().unwrap_or_else(|| failure.into()),
        choices: w.choices.clone(),
        steps: w.steps.iter().skip(1).map(|s| s.notes.clone()).collect(),
        // The walk numbers its steps from 1; the file's index is from 0.
        cycle_start: w.cycle_step.map(|c| c - 1),
    }
}

fn steps_page(info: &AlgoInfo, opts: &CheckOpts, mut w: Walk, dir: &FsPath) -> Result<PathBuf, String> {
    w.algorithm = info.name.to_string();
    let steps = w.choices.len();
    let flags = opts.flags();
    let flags = if flags.is_empty() { String::new() } else { format!(" {}", flags.join(" ")) };
    let what = match (&w.failure, w.cycle_step) {
        (Some(f), Some(c)) => format!("{f} (steps {c} to {steps} repeat for ever)"),
        _ => String::new(),
    };
    let what = match (&w.failure, w.violation_step) {
        _ if !what.is_empty() => what,
        (Some(f), Some(k)) => format!("{f} (step {k} of {steps})"),
        (Some(f), None) => format!("{f} ({steps} steps)"),
        _ => format!("{steps} steps"),
    };
    let title = format!("{} -n {} -k {}{flags}: {what}", info.name, opts.n, opts.entries);
    let json = serde_json::to_string(&w).map_err(|e| e.to_string())?;
    let page = crate::html::step_page(&title, Some(&json), crate::html::PageMode::Static);
    let path = dir.join(STEPS_PAGE);
    crate::html::write_whole(&path, &page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

fn absolute(p: &FsPath) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn ok(v: Value) -> Reply {
    (200, "application/json", v.to_string())
}

fn error(status: u16, why: String) -> Reply {
    (status, "application/json", json!({ "error": why }).to_string())
}

/// `I,J,K` as indices; empty is the start.
fn parse_path(text: &str) -> Result<Vec<u32>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let text = text.replace("%2C", ",").replace("%2c", ",");
    let path = text
        .split(',')
        .map(|i| i.parse::<u32>().map_err(|_| format!("a path is indices separated by commas, not {i:?}")))
        .collect::<Result<Vec<u32>, String>>()?;
    if path.len() > MAX_STEPS {
        return Err(format!("a path of {} steps is longer than the {MAX_STEPS} a walk shows", path.len()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explorer(algo: &str, n: u32) -> (Explorer, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let info = crate::registry::lookup(algo).unwrap();
        let opts = info.check_opts(CheckOpts::new(n, 1));
        (Explorer::new(info, opts, dir.path().join("saved")).unwrap(), dir)
    }

    fn get(e: &mut Explorer, route: &str, post: bool) -> (u16, Value) {
        let url = format!("{route}{}token={}", if route.contains('?') { "&" } else { "?" }, e.token);
        let (status, _, body) = e.answer(&url, post, None);
        (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
    }

    #[test]
    fn a_request_without_the_token_is_refused() {
        let (mut e, _d) = explorer("ricart-agrawala", 2);
        let (status, _, body) = e.answer("/api/walk?path=0", false, None);
        assert_eq!(status, 403, "{body}");
        let (status, _, _) = e.answer("/api/walk?token=nope&path=0", false, Some("mutexlab_explore=nope"));
        assert_eq!(status, 403);
        let cookie = format!("other=1; {COOKIE}={}", e.token);
        let (status, _, body) = e.answer("/api/walk?path=0", false, Some(&cookie));
        assert_eq!(status, 200, "the page's own cookie is its token: {body}");
    }

    #[test]
    fn walking_choosing_and_saving_a_path_gives_a_file_replay_reads() {
        let (mut e, _d) = explorer("ricart-agrawala", 2);
        let (status, start) = get(&mut e, "/api/walk?path=", false);
        assert_eq!(status, 200, "{start}");
        let offered = start["enabled"].as_array().unwrap().len();
        assert!(offered > 0);
        let (status, three) = get(&mut e, "/api/walk?path=0,0,0", false);
        assert_eq!(status, 200, "{three}");
        assert_eq!(three["steps"].as_array().unwrap().len(), 4);
        let (status, bad) = get(&mut e, "/api/walk?path=0,77", false);
        assert_eq!(status, 400);
        assert!(bad["error"].as_str().unwrap().contains("no choice 77"), "{bad}");
        let (status, _) = get(&mut e, "/api/walk?path=0,x", false);
        assert_eq!(status, 400);
        let (status, saved) = get(&mut e, "/api/save?path=0,0,0", true);
        assert_eq!(status, 200, "{saved}");
        let file = CounterexampleFile::read(FsPath::new(saved["file"].as_str().unwrap())).unwrap();
        assert_eq!(file.choices.len(), 3);
        assert_eq!(file.algorithm, "ricart-agrawala");
        // A second save does not overwrite the first.
        let (_, again) = get(&mut e, "/api/save?path=0", true);
        assert_ne!(again["file"], saved["file"]);
        assert_eq!(get(&mut e, "/api/save?path=0", false).0, 405);
    }

    #[test]
    fn check_from_here_finds_the_none_baseline_s_overlap_as_a_path_to_load() {
        let (mut e, _d) = explorer("none", 2);
        let (status, found) = get(&mut e, "/api/check?path=0", false);
        assert_eq!(status, 200, "{found}");
        assert_eq!(found["found"], true, "{found}");
        let path: Vec<u64> = found["path"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(path[0], 0, "the path starts with the steps already taken");
        let joined = path.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let (_, w) = get(&mut e, &format!("/api/walk?path={joined}"), false);
        assert_eq!(w["property"], "mutual exclusion", "{w}");
        // Ricart-Agrawala has none to find.
        let (mut ra, _d) = explorer("ricart-agrawala", 2);
        let (_, none) = get(&mut ra, "/api/check?path=0", false);
        assert_eq!(none["found"], false, "{none}");
        assert!(none["summary"].as_str().unwrap().contains("no violation reachable"), "{none}");
    }
}
