//! Every command's real `--json` output validates against its published schema in
//! `schemas/` (which `schemas::tests` holds to the types), and a document that breaks a
//! schema is refused.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// The schema published as `schemas/FILE`.
fn schema(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// What is wrong with `doc` by `schemas/FILE`, one line each (none: it is valid).
pub fn errors(file: &str, doc: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    validator.iter_errors(doc).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

/// `doc` is valid by `schemas/FILE`, and stops being so without its first required
/// field or with that field's value replaced by one of another JSON type (the negative
/// control, for every schema a test uses).
pub fn assert_valid(file: &str, doc: &Value) {
    let wrong = errors(file, doc);
    assert!(wrong.is_empty(), "{file}:\n{}\nin {doc:#}", wrong.join("\n"));
    let required = schema(file)["required"].as_array().and_then(|r| r.first()).cloned();
    let field = required.as_ref().and_then(Value::as_str).expect("a schema with a required field");
    let mut cut = doc.clone();
    cut.as_object_mut().expect("an object").remove(field);
    assert!(!errors(file, &cut).is_empty(), "{file}: valid without {field}");
    let mut retyped = doc.clone();
    retyped[field] = match doc[field] {
        Value::String(_) => Value::Bool(true),
        _ => Value::String("not this".into()),
    };
    assert!(!errors(file, &retyped).is_empty(), "{file}: valid with a string {field}");
}

/// The JSON object `mutexlab ARGS` printed, having exited `code`.
fn output(args: &[&str], code: i32) -> Value {
    let out = run(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    json(&out)
}

#[test]
fn run_elect_and_audit_print_what_their_schemas_say() {
    let tmp = tempfile::tempdir().unwrap();
    let (r, e) = (tmp.path().join("run"), tmp.path().join("elect"));
    let (r, e) = (r.to_str().unwrap(), e.to_str().unwrap());
    let ran = output(&["run", "-n", "2", "-k", "2", "--keep", "--run-dir", r, "--json"], 0);
    assert_valid("run.schema.json", &ran);
    let elected = output(&["elect", "-n", "3", "--settle-ms", "100", "--keep", "--run-dir", e, "--json"], 0);
    assert_valid("run.schema.json", &elected);
    // A failed run's report, with its violations.
    let failed = output(&["run", "--algo", "none", "-n", "3", "-k", "3", "--json"], 1);
    assert!(failed["violation_count"].as_u64() > Some(0), "{failed}");
    assert_valid("run.schema.json", &failed);
    assert_valid("audit.schema.json", &output(&["audit", r, "--json"], 0));
    assert_valid("audit.schema.json", &output(&["audit", e, "--json"], 0));
}

#[test]
fn check_and_replay_print_what_their_schemas_say() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ce");
    let found = check_out(&["--algo", "none", "-n", "2", "-k", "1", "--json"], &dir);
    assert_eq!(found.status.code(), Some(1), "{}", stderr(&found));
    let found = json(&found);
    assert!(found["violation"].is_object(), "{found}");
    assert_valid("check.schema.json", &found);
    assert_valid("check.schema.json", &output(&["check", "--algo", "lamport", "-n", "2", "--json"], 0));
    let replayed = output(&["replay", dir.to_str().unwrap(), "--json"], 1);
    assert_valid("run.schema.json", &replayed);
}

#[test]
fn algorithms_and_sim_print_what_their_schemas_say() {
    assert_valid("algorithms.schema.json", &output(&["algorithms", "--json"], 0));
    let messages = output(&["algorithms", "--messages", "--json"], 0);
    assert!(messages["algorithms"][0]["messages"].is_array(), "{messages}");
    assert_valid("algorithms.schema.json", &messages);
    let failing = output(&["sim", "--algo", "none", "--seeds", "0..3", "--json"], 1);
    assert!(!failing["failures"].as_array().unwrap().is_empty(), "{failing}");
    assert_valid("sim.schema.json", &failing);
    assert_valid("sim.schema.json", &output(&["sim", "--algo", "lamport", "--seeds", "0..3", "--json"], 0));
}

#[test]
fn compare_prints_what_its_schema_says() {
    let args = ["compare", "--algos", "centralized", "-n", "2", "-k", "2", "--repeat", "1", "--json"];
    assert_valid("compare.schema.json", &output(&args, 0));
}

#[test]
fn superpeers_prints_what_its_schema_says() {
    let selected = output(&["superpeers", "-n", "100,300", "--json"], 0);
    assert_eq!(selected["runs"].as_array().map(Vec::len), Some(2), "{selected}");
    assert_valid("superpeers.schema.json", &selected);
}

#[test]
fn a_document_that_breaks_a_schema_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("run");
    let ran = output(&["run", "-n", "2", "-k", "1", "--keep", "--run-dir", r.to_str().unwrap(), "--json"], 0);
    assert!(errors("run.schema.json", &ran).is_empty());
    // A field of the wrong type deep inside, a negative count, an unknown fault field's
    // type, a service part missing: each is named.
    for (path, value) in [
        ("/wait_ms/p50", Value::String("fast".into())),
        ("/entries/total", Value::from(-1)),
        ("/network", Value::Null),
        ("/workers", Value::from(1.5)),
    ] {
        let mut broken = ran.clone();
        *broken.pointer_mut(path).unwrap_or_else(|| panic!("{path} in {ran}")) = value;
        let wrong = errors("run.schema.json", &broken);
        assert!(!wrong.is_empty(), "{path}: accepted");
    }
    let mut no_part = ran.clone();
    no_part.as_object_mut().unwrap().remove("throughput_per_s");
    assert!(!errors("run.schema.json", &no_part).is_empty(), "a run without its mutual-exclusion part");
    // An audit of neither kind of file.
    assert!(!errors("audit.schema.json", &serde_json::json!({"schema": 1})).is_empty());
}
