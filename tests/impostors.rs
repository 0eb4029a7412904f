//! Processes that are not part of a run try to speak in it, through the real binary:
//! connections to a live worker's mesh socket that claim to be another worker without
//! the run's secret (an old-style hello, a wrong secret, a future life), garbage, and
//! frames forged behind each hello. The run must stay clean, and each must be dropped
//! with a line on stderr that says what was wrong. (Impostors that hold the secret but
//! claim a stale, future or already-connected life are played in tests/runtime.rs,
//! where the test is the supervisor and knows the secret.)

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::common::*;
use mutexlab::algorithm::PeerId;
use mutexlab::auth::{Hello, Secret};
use mutexlab::wire::{self, Envelope};

/// The hello of the protocol before the secret: a caller's id and life, nothing more.
#[derive(serde::Serialize)]
struct OldHello {
    from: PeerId,
    incarnation: u32,
}

/// Connect to `sock`, send `first`, then forged frames from `from` behind it; the
/// worker may close the connection at any point, so write errors are expected.
fn impostor<M: serde::Serialize>(sock: &Path, first: &[u8], from: u32, to: u32, msgs: &[M]) {
    let mut s = UnixStream::connect(sock).unwrap();
    let mut buf = first.to_vec();
    for (i, msg) in msgs.iter().enumerate() {
        wire::encode(&mut buf, &Envelope { from: PeerId(from), to: PeerId(to), clock: 1000 + i as u64, msg });
    }
    let _ = s.write_all(&buf);
}

fn frame<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let mut buf = Vec::new();
    wire::encode(&mut buf, value);
    buf
}

#[test]
fn impostors_at_the_coordinator_cannot_release_for_anyone() {
    use mutexlab::algos::centralized::Msg;
    let bg = Background::start(&["-n", "4", "-k", "400", "--cs-ms", "0.2", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    // w3 coordinates: a forged RELEASE from the holder would let the next one in early.
    let sock = bg.run_dir().join("w3.0.sock");
    let releases = vec![Msg::Release; 50];
    let wrong = Secret::generate().unwrap();
    // 1. The old hello, with no secret at all, claiming the live w0.
    impostor(&sock, &frame(&OldHello { from: PeerId(0), incarnation: 0 }), 0, 3, &releases);
    // 2. A wrong secret, claiming w0's current life.
    impostor(&sock, &frame(&Hello::new(&wrong, PeerId(0), PeerId(3), 0)), 0, 3, &releases);
    // 3. A wrong secret, claiming a later life of w0.
    impostor(&sock, &frame(&Hello::new(&wrong, PeerId(0), PeerId(3), 7)), 0, 3, &releases);
    // 4. A stranger's id; 5. a length far beyond the cap; 6. a body that is not MessagePack.
    impostor(&sock, &frame(&Hello::new(&wrong, PeerId(99), PeerId(3), 0)), 99, 3, &releases);
    UnixStream::connect(&sock).unwrap().write_all(&u32::MAX.to_be_bytes()).unwrap();
    UnixStream::connect(&sock).unwrap().write_all(&[0, 0, 0, 4, 0xc1, 0xc1, 0xc1, 0xc1]).unwrap();
    let out = bg.finish();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}\n{}", stdout(&out));
    assert!(stdout(&out).contains("audit       OK"), "{}", stdout(&out));
    let dropped =
        |needle: &str| err.lines().filter(|l| l.starts_with("mutexlab: w3: ") && l.contains(needle)).count();
    assert_eq!(dropped("its first frame is not a hello"), 2, "{err}");
    assert_eq!(dropped("claims to be w0 (incarnation 0) without the run's secret"), 1, "{err}");
    assert_eq!(dropped("claims to be w0 (incarnation 7) without the run's secret"), 1, "{err}");
    assert_eq!(dropped("claims to be w99 (incarnation 0) without the run's secret"), 1, "{err}");
    assert_eq!(dropped("exceeds the 65536-byte cap"), 1, "{err}");
}

#[test]
fn claims_of_thirty_future_lives_cannot_reply_for_a_live_worker() {
    use mutexlab::algos::ricart_agrawala::Msg;
    let bg = Background::start(&[
        "--algo",
        "ricart-agrawala",
        "-n",
        "4",
        "-k",
        "300",
        "--cs-ms",
        "0.2",
        "--think-ms",
        "1",
    ]);
    bg.wait_for_exits(3);
    let sock = bg.run_dir().join("w3.0.sock");
    let wrong = Secret::generate().unwrap();
    let replies = vec![Msg::Reply; 20];
    for inc in 1..=30 {
        impostor(&sock, &frame(&Hello::new(&wrong, PeerId(0), PeerId(3), inc)), 0, 3, &replies);
    }
    let out = bg.finish();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}\n{}", stdout(&out));
    assert!(stdout(&out).contains("audit       OK"), "{}", stdout(&out));
    let lines =
        err.lines().filter(|l| l.contains("claims to be w0") && l.contains("without the run's secret"));
    assert_eq!(lines.count(), 30, "{err}");
    assert!(!err.contains("w3: refusing"), "a hello without the secret got as far as its incarnation: {err}");
}

#[test]
fn the_supervisor_listens_on_no_path_and_floods_of_callers_cost_it_nothing() {
    let bg = Background::start(&["-n", "3", "-k", "300", "--cs-ms", "0.2", "--think-ms", "1"]);
    bg.wait_for_exits(3);
    let dir = bg.run_dir();
    // The control links are socket pairs: the only sockets in the directory are the
    // workers' mesh sockets.
    let mut names: Vec<String> = Background::sockets(&dir)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["w0.0.sock", "w1.0.sock", "w2.0.sock"]);
    // Idle callers at every worker: each worker caps and drops them; the supervisor
    // never sees them, and keeps its two threads per worker and a few of its own.
    let idle: Vec<UnixStream> =
        (0..600).filter_map(|i| UnixStream::connect(dir.join(&names[i % 3])).ok()).collect();
    let threads = std::fs::read_dir(format!("/proc/{}/task", bg.pid())).unwrap().count();
    assert!(threads <= 2 * 3 + 4, "{threads} threads in the supervisor");
    let out = bg.finish();
    drop(idle);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("audit       OK"));
}

#[test]
fn a_flood_of_silent_callers_cannot_shut_a_restarted_worker_out() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    // Before: with every worker's room for callers full of silent connections, the
    // restarted w2's dials were refused, the survivors took it for dead for good, and
    // ricart-agrawala, reading silence as consent, let two in thousands of times.
    let bg = Background::start(&[
        "--algo",
        "ricart-agrawala",
        "-n",
        "4",
        "--duration",
        "3",
        "--stall-ms",
        "2000",
        "--faults",
        "kill 2 at 300ms; restart 2 at 600ms",
    ]);
    bg.wait_for_exits(3);
    let dir = bg.run_dir();
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let (stop, dir) = (stop.clone(), dir.clone());
        std::thread::spawn(move || {
            // The latest few hundred connections stay open; older ones are let go.
            let mut open: std::collections::VecDeque<UnixStream> = Default::default();
            while !stop.load(Ordering::SeqCst) {
                for w in [0, 1, 3] {
                    for _ in 0..30 {
                        if let Ok(s) = UnixStream::connect(dir.join(format!("w{w}.0.sock"))) {
                            open.push_back(s);
                        }
                    }
                }
                while open.len() > 300 {
                    open.pop_front();
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let mut bg = bg;
    let out = bg.child.take().unwrap().wait_with_output().unwrap();
    stop.store(true, Ordering::SeqCst);
    flood.join().unwrap();
    let (err, text) = (stderr(&out), stdout(&out));
    assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
    assert!(text.contains("audit       OK"), "{text}");
    assert!(text.contains("restart w2"), "{text}");
    assert!(err.contains("to make room for new callers"), "{err}");
    assert!(err.lines().count() < 400, "stderr is bounded: {} lines", err.lines().count());
}
