//! `mutexlab elect --algo superpeer` as processes: twelve workers choose super-peers,
//! one of them (the coordinator, the lowest rank) is killed, its orphans are re-homed,
//! and the leader file audits clean; the same file read with another seed's places
//! does not.

use crate::common::*;

#[test]
fn twelve_workers_choose_super_peers_and_re_home_the_orphans_of_a_killed_one() {
    let seed = 3u64;
    // The lowest rank is always a super-peer (nobody can cover it first) and the
    // coordinator: the hardest one to lose.
    let (_, rank, _) = mutexlab::latency::layout(seed, 12, mutexlab::latency::SIDE_MS);
    let victim = (0..12).min_by_key(|&i| (rank[i], i)).unwrap();
    let tmp = tempfile::Builder::new().prefix("mlf-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let plan = format!("kill {victim} at 1500ms");
    let s = seed.to_string();
    let args =
        ["elect", "--json", "--keep", "--run-dir", dir.to_str().unwrap(), "--algo", "superpeer", "-n", "12"];
    let out = run(&[&args[..], &["--seed", &s, "--faults", &plan]].concat());
    let needle = dir.canonicalize().unwrap_or(dir.clone()).display().to_string();
    assert!(processes_mentioning(&needle).is_empty(), "workers outlived the run");
    let j = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    assert_eq!(j["violation_count"], 0, "{}", j["violations"]);
    assert_eq!(j["faults"][0]["worker"], victim as u64, "{j}");
    // The first table, and the coordinator's successor's.
    assert_eq!(j["elections"], 2, "{j}");
    let by_type = &j["messages"]["by_type"];
    assert_eq!(by_type["REPORT"], 11, "{j}");

    // The files alone judge it: clean as written, and not with another seed's places.
    let leaders = dir.join("leaders.log");
    let audit = run(&["audit", dir.to_str().unwrap()]);
    assert_eq!(audit.status.code(), Some(0), "{}", stdout(&audit));
    // Measured as the simulator measures its own: 11 live workers, all within the bound.
    let measured = run(&["superpeers", "--run", dir.to_str().unwrap()]);
    assert_eq!(measured.status.code(), Some(0), "{}", stderr(&measured));
    let row = stdout(&measured).lines().find(|l| l.starts_with("| real run")).unwrap_or_default().to_string();
    assert!(row.starts_with("| real run, at its end | 11 |") && row.contains("| 100.0 % |"), "{row}");
    let text = std::fs::read_to_string(&leaders).unwrap();
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("# mutexlab leaders v1 algo=superpeer workers=12 ")
            && header.split(' ').any(|f| f == format!("seed={seed}")),
        "{text}"
    );
    std::fs::write(&leaders, text.replacen(&format!("seed={seed}"), "seed=2", 1)).unwrap();
    let audit = run(&["audit", dir.to_str().unwrap()]);
    assert_eq!(audit.status.code(), Some(1), "{}", stdout(&audit));
    assert!(stdout(&audit).contains("beyond-bound"), "{}", stdout(&audit));
}

/// `superpeer-cells` as processes: 48 workers in two id groups choose the cells' super-
/// peers with no all-to-all (each talks to its head and its directory), one super-peer
/// is killed and its followers re-homed by their cell's directory, and the files alone
/// audit clean.
#[test]
fn forty_eight_workers_elect_each_cell_s_super_peers_and_re_home_a_killed_one_s_followers() {
    use mutexlab::algos::superpeer_cells::{directory, head_of};
    let (seed, n) = (2u64, 48u32);
    let chosen = mutexlab::latency::cells_select(seed, n as usize);
    let directs = |i: u32| (0..mutexlab::latency::CELLS).any(|c| directory(c, n) == i);
    let victim = (0..n)
        .find(|&i| chosen[i as usize] == Some(i) && head_of(i) != i && !directs(i))
        .expect("a super-peer that neither heads nor directs");
    let followers = chosen.iter().filter(|s| **s == Some(victim)).count() - 1;
    let tmp = tempfile::Builder::new().prefix("mlf-").tempdir().unwrap();
    let dir = tmp.path().join("run");
    let (plan, s, w) = (format!("kill {victim} at 1500ms"), seed.to_string(), n.to_string());
    let args = ["elect", "--json", "--keep", "--run-dir", dir.to_str().unwrap(), "--algo", "superpeer-cells"];
    let out =
        run(&[&args[..], &["-n", &w, "--seed", &s, "--faults", &plan, "--detector", "perfect"]].concat());
    let needle = dir.canonicalize().unwrap_or(dir.clone()).display().to_string();
    assert!(processes_mentioning(&needle).is_empty(), "workers outlived the run");
    let j = json(&out);
    assert_eq!(out.status.code(), Some(0), "{}\n{j}", stderr(&out));
    assert_eq!(j["violation_count"], 0, "{}", j["violations"]);
    let by_type = &j["messages"]["by_type"];
    // Every worker but the two heads joins (the killed one's JOIN counted only if its
    // sends were recovered); no HELLO to everyone.
    let (joins, unreported) = (by_type["JOIN"].as_u64().unwrap(), j["unreported"].as_u64().unwrap());
    assert!(joins <= u64::from(n - 2) && joins + unreported >= u64::from(n - 2), "{j}");
    assert!(by_type.get("HELLO").is_none(), "{j}");
    // A ROLE each (less a directory's own), and one more for each re-homed follower.
    let roles = by_type["ROLE"].as_u64().unwrap();
    assert!(roles >= u64::from(n) - 16 + followers as u64, "{roles} ROLEs, {followers} followers: {j}");
    let measured = run(&["superpeers", "--run", dir.to_str().unwrap()]);
    assert_eq!(measured.status.code(), Some(0), "{}", stderr(&measured));
    let text = stdout(&measured);
    let row = text.lines().find(|l| l.starts_with("| real run")).unwrap_or_default().to_string();
    assert!(row.starts_with("| real run, at its end | 47 |") && row.contains("| 100.0 % |"), "{text}");
    assert!(text.contains("simulator, the cells' rule"), "{text}");
}
