//! The README, held to what the program does: every field `run --json` and `audit --json`
//! print is in the README's list of them, and the commands of its blocks marked for
//! testing run as it says they do.

use std::path::Path;

use crate::common::*;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

/// The paragraph of `text` that begins with `start`.
fn paragraph<'a>(text: &'a str, start: &str) -> &'a str {
    let i = text.find(start).unwrap_or_else(|| panic!("the README has no paragraph starting {start:?}"));
    let rest = &text[i..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

/// The fields of `j` (and of its objects in `nested`) that `doc` does not name: a field
/// `k` is named as `` `k` `` or `` `k.… ``, a field `s` of object `k` as `` `k.s` ``,
/// `` `s` `` or inside `` `k.{…}` ``.
fn undocumented(doc: &str, j: &serde_json::Value, nested: &[&str]) -> Vec<String> {
    let mut missing = Vec::new();
    for (k, v) in j.as_object().expect("an object") {
        if !doc.contains(&format!("`{k}`")) && !doc.contains(&format!("`{k}.")) {
            missing.push(k.clone());
        }
        if !nested.contains(&k.as_str()) {
            continue;
        }
        let group = doc.find(&format!("`{k}.{{")).map(|i| &doc[i..i + doc[i..].find('}').unwrap_or(0)]);
        for s in v.as_object().into_iter().flat_map(|o| o.keys()) {
            let named = doc.contains(&format!("`{k}.{s}`"))
                || doc.contains(&format!("`{s}`"))
                || group.is_some_and(|g| g.split(['{', ',', ' ', '\n']).any(|w| w == s));
            if !named {
                missing.push(format!("{k}.{s}"));
            }
        }
    }
    missing
}

#[test]
fn every_field_of_run_json_is_in_the_readme() {
    let out = run(&["run", "-n", "2", "-k", "2", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    let text = readme();
    let doc = paragraph(&text, "`--json` prints: `schema`");
    let nested = ["messages", "entries", "wait_ms", "network", "theory"];
    assert_eq!(undocumented(doc, &j, &nested), Vec::<String>::new());
    // The negative control: the list without `seed` and `bad_frames` misses them.
    let cut = doc.replace("`seed`", "").replace("`messages.bad_frames`", "");
    assert_eq!(undocumented(&cut, &j, &nested), ["messages.bad_frames", "seed"]);
}

#[test]
fn every_field_of_elect_json_is_in_the_readme() {
    let out = run(&["elect", "-n", "3", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = json(&out);
    let text = readme();
    let doc = paragraph(&text, "`--json` prints `schema`, `network`, `algorithm`");
    assert_eq!(undocumented(doc, &j, &["messages"]), Vec::<String>::new());
    // The negative control: the list without `timeouts` misses it.
    let cut = doc.replace("`timeouts`", "");
    assert_eq!(undocumented(&cut, &j, &["messages"]), ["timeouts"]);
}

#[test]
fn audit_json_has_a_schema_and_every_field_is_in_the_readme() {
    let tmp = tempfile::tempdir().unwrap();
    let text = readme();
    let doc = paragraph(&text, "`mutexlab audit --json` prints one object.");
    for (command, size, file) in
        [("run", ["-k", "2"], "resource.log"), ("elect", ["--settle-ms", "100"], "leaders.log")]
    {
        let dir = tmp.path().join(command);
        let out = run(&[command, "-n", "3", size[0], size[1], "--keep", "--run-dir", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let out = run(&["audit", dir.join(file).to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let j = json(&out);
        assert_eq!(j["schema"], 1, "{command}: {j}");
        assert_eq!(undocumented(doc, &j, &["wait_ms"]), Vec::<String>::new(), "{command}");
    }
}

/// The commands of the README's blocks marked for testing (```` ```sh test ```` and
/// ```` ```console test ````): in `sh` blocks every line that is not a comment, in
/// `console` blocks the lines after `$ `, a trailing `\` joining the next line. Each is
/// `(line number, command, the exit code its comment gives as "# exit N", else 0)`.
fn tested_commands(text: &str) -> Vec<(usize, String, i32)> {
    let mut cmds = Vec::new();
    let mut block: Option<bool> = None; // Some(console?) inside a tested block
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(info) = line.strip_prefix("```") {
            block = match (block, info.trim()) {
                (None, "sh test") => Some(false),
                (None, "console test") => Some(true),
                _ => None,
            };
            continue;
        }
        let Some(console) = block else { continue };
        let cmd = match (&mut pending, console) {
            (Some((_, acc)), _) => {
                acc.push(' ');
                acc.push_str(line.trim());
                acc.clone()
            }
            (None, true) => match line.strip_prefix("$ ") {
                Some(c) => c.to_string(),
                None => continue,
            },
            (None, false) if line.trim().is_empty() || line.trim_start().starts_with('#') => continue,
            (None, false) => line.to_string(),
        };
        let start = pending.take().map_or(n, |(s, _)| s);
        if let Some(head) = cmd.strip_suffix('\\') {
            pending = Some((start, head.trim_end().to_string()));
            continue;
        }
        let (command, comment) = cmd.split_once(" # ").unwrap_or((&cmd, ""));
        let exit =
            comment.strip_prefix("exit ").and_then(|c| c.split(|ch: char| !ch.is_ascii_digit()).next());
        cmds.push((start, command.trim().to_string(), exit.and_then(|e| e.parse().ok()).unwrap_or(0)));
    }
    cmds
}

/// Run `cmds` in order in `dir` with `mutexlab` on the PATH; what went otherwise than
/// the README says, one line each.
fn run_commands(cmds: &[(usize, String, i32)], dir: &Path) -> Vec<String> {
    let bin = assert_cmd::cargo::cargo_bin("mutexlab");
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let mut wrong = Vec::new();
    for (n, cmd, exit) in cmds {
        // A simple command replaces the shell, so the timeout's kill reaches it (and its
        // workers, which die with their supervisor).
        let simple = !cmd.contains(['&', '|', ';', '\n']);
        let script = if simple { format!("exec {cmd}") } else { cmd.clone() };
        let mut c = assert_cmd::Command::new("sh");
        c.arg("-c").arg(script).current_dir(dir).env("PATH", &path).timeout(PATIENCE);
        let out = c.output().expect("sh runs");
        if out.status.code() != Some(*exit) {
            let err = stderr(&out);
            let tail: String = err.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            wrong.push(format!("README.md:{n}: `{cmd}` exited {:?}, not {exit}: {tail}", out.status.code()));
        }
    }
    wrong
}

#[test]
fn the_readme_s_tested_commands_run_as_it_says() {
    let text = readme();
    let cmds = tested_commands(&text);
    // The marked blocks: a run, a failing run, the store, check, replay, faults, a
    // program in Python, the trace and its ShiViz export.
    assert!(cmds.len() >= 15, "{cmds:#?}");
    assert!(cmds.iter().any(|(_, c, e)| c.starts_with("mutexlab run --algo none") && *e == 1), "{cmds:#?}");
    let tmp = tempfile::tempdir().unwrap();
    // The examples name files of the repository (labs/examples/…) relative to its root.
    std::os::unix::fs::symlink(Path::new(env!("CARGO_MANIFEST_DIR")).join("labs"), tmp.path().join("labs"))
        .unwrap();
    let wrong = run_commands(&cmds, tmp.path());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_readme_command_that_does_not_do_what_it_says_is_caught() {
    // The negative control of the test above, on a README of three lines.
    let text = "```sh test\nmutexlab run --algo nope   # exit 0\nmutexlab algorithms \\\n  --nope\n```\n\
                ```sh\nmutexlab not-tested\n```\n```console test\n$ mutexlab algorithms\nignored output\n```\n";
    let cmds = tested_commands(text);
    assert_eq!(
        cmds,
        [
            (2, "mutexlab run --algo nope".to_string(), 0),
            (3, "mutexlab algorithms --nope".to_string(), 0),
            (10, "mutexlab algorithms".to_string(), 0)
        ]
    );
    let tmp = tempfile::tempdir().unwrap();
    let wrong = run_commands(&cmds, tmp.path());
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].starts_with("README.md:2: `mutexlab run --algo nope` exited Some(2), not 0: "),
        "{wrong:?}"
    );
}

/// The README's three statements of the most workers a run has are the program's one
/// constant, and the program holds to it at the limit and one past it.
#[test]
fn the_readme_s_worker_limit_is_the_program_s() {
    let max = mutexlab::algorithm::MAX_WORKERS;
    let shown = format!("{},{:03}", max / 1000, max % 1000);
    let text = readme();
    for said in [
        format!("| `-n`, `--workers` | worker processes (1–{shown}) |"),
        format!("without one, {shown} and up) |"),
        format!("a header's `workers=` above {shown} (the most a run has)"),
    ] {
        assert!(text.contains(&said), "README.md should say {said:?}");
    }
    // A header of one more is refused by the trace reader, an id of the limit is corrupt.
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("resource.log");
    std::fs::write(
        &f,
        format!("# mutexlab resource v1 algo=test\nWANT w={} e=1 t=1\nWANT w={max} e=1 t=2\n", max - 1),
    )
    .unwrap();
    let out = run(&["audit", f.to_str().unwrap(), "--json"]);
    let j = json(&out);
    let kinds: Vec<&str> =
        j["violations"].as_array().unwrap().iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["corrupt-record", "unserved"], "{j}");
    let out = run(&["run", "-n", &(max + 1).to_string(), "-k", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The README's layout map ("How it is built"), as entries: each path it names (a
/// top-level line, or an indented name under the folder above it) with the text that
/// describes it.
fn layout_map(text: &str) -> Vec<(String, String)> {
    let start = text.find("## How it is built\n").expect("the README has a layout map");
    let block = &text[start..];
    let block = &block[block.find("```text\n").unwrap() + 8..];
    let block = &block[..block.find("```").unwrap()];
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut folder = String::new();
    for line in block.lines() {
        let (path, rest) = match (line.strip_prefix("  "), line.starts_with(' ')) {
            // A description carried on: it belongs to the entry above.
            (_, true) if line.starts_with("   ") => {
                entries.last_mut().unwrap().1.push_str(line);
                continue;
            }
            (Some(sub), _) => {
                let name = sub.split_whitespace().next().unwrap();
                (format!("{folder}{name}"), &sub[name.len()..])
            }
            _ => {
                let name = line.split_whitespace().next().unwrap();
                if name.ends_with('/') {
                    folder = name.to_string();
                }
                (name.to_string(), &line[name.len()..])
            }
        };
        entries.push((path, rest.to_string()));
    }
    entries
}

#[test]
fn the_readme_s_layout_map_is_the_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = layout_map(&readme());
    let named: std::collections::BTreeSet<&str> = map.iter().map(|(p, _)| p.as_str()).collect();
    let mut wrong = Vec::new();
    for (path, about) in &map {
        if !root.join(path).exists() {
            wrong.push(format!("the map names {path}, which is not in the tree"));
        }
        // Every file a folder's description names in backquotes is in that folder.
        // (a file's own folder, `check/` beside `check.rs`, resolves from its parent).
        let dir = if path.ends_with('/') {
            root.join(path)
        } else {
            root.join(path).parent().unwrap().to_path_buf()
        };
        for quoted in about.split('`').skip(1).step_by(2) {
            if quoted.ends_with(".rs") && !quoted.contains(' ') && !dir.join(quoted).exists() {
                wrong.push(format!("{path}'s line names {quoted}, which is not there"));
            }
        }
    }
    // Every crate of the workspace, every module of the top crate and of the core is
    // named, and every file of the folders the map describes file by file.
    let listed = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name() != "Cargo.toml" && e.file_name() != "lib.rs")
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    format!("{dir}{name}/")
                } else {
                    format!("{dir}{name}")
                }
            })
            .collect();
        v.sort();
        v
    };
    for entry in listed("lib/").into_iter().chain(listed("lib/core/")) {
        // A module's folder of submodules (`check/` beside `check.rs`) goes with its file.
        let file_of_folder = entry.strip_suffix('/').map(|d| format!("{d}.rs"));
        if !named.contains(entry.as_str()) && !file_of_folder.is_some_and(|f| named.contains(f.as_str())) {
            wrong.push(format!("{entry} is in the tree, not in the map"));
        }
    }
    let about = |path: &str| map.iter().find(|(p, _)| p == path).map(|(_, a)| a.clone()).unwrap_or_default();
    for dir in ["lib/supervisor/", "lib/audit/", "lib/html/", "lib/runtime/", "lib/sim/"] {
        let text = about(dir);
        for file in listed(dir) {
            let name = file.rsplit('/').find(|s| !s.is_empty()).unwrap();
            let tested = name.ends_with("tests.rs");
            if !file.ends_with('/')
                && !tested
                && !text.contains(&format!("`{name}`"))
                && !named.contains(file.as_str())
            {
                wrong.push(format!("{file} is in the tree, not in its folder's line of the map"));
            }
        }
    }
    assert!(wrong.is_empty(), "the README's layout map and the tree differ:\n{}", wrong.join("\n"));
}

/// The schema files `names` leaves out of `dir`.
fn schemas_unnamed(dir: &Path, names: &str) -> Vec<String> {
    let mut missing: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".schema.json") && !names.contains(&format!("`{f}`")))
        .collect();
    missing.sort();
    missing
}

#[test]
fn the_readme_names_every_schema_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let text = readme();
    let list = paragraph(&text, "Every `--json` output has a JSON Schema");
    assert_eq!(schemas_unnamed(&dir, list), Vec::<String>::new());
    // The negative control: the list without one of them misses it.
    let cut = list.replace("`superpeers.schema.json`", "");
    assert_eq!(schemas_unnamed(&dir, &cut), ["superpeers.schema.json"]);
}
