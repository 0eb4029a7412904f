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
                || group.is_some_and(|g| g.split(['{', ',', ' ']).any(|w| w == s));
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
