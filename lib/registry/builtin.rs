//! The table of the algorithms the lab ships ([`BUILTIN`]): one entry per algorithm,
//! with its family, summary, theory of message cost and the notes' claims.

use super::*;

/// Every algorithm the lab ships, in the order `mutexlab algorithms` lists them. Adding
/// one is one entry here (and its module above): the entry names its type.
pub static BUILTIN: &[AlgoInfo] = &[
    AlgoInfo {
        name: "none",
        family: Family::Baseline,
        summary: "no coordination at all: the negative control the auditor must flag",
        kernel_lock: false,
        theory: |_| Theory::exact(0.0, "0"),
        mixed: None,
        symmetric: Some(check_node_symmetric::<baseline::Immediate>),
        ..AlgoInfo::runs::<baseline::Immediate>()
    },
    AlgoInfo {
        name: "flock",
        measured_clean: Some(1024),
        family: Family::Baseline,
        summary: "the kernel's exclusive flock(2) on the resource file; no messages",
        kernel_lock: true,
        theory: |_| Theory::exact(0.0, "0"),
        mixed: None,
        ..AlgoInfo::runs::<baseline::Immediate>()
    },
    AlgoInfo {
        name: "centralized",
        few_peers: true,
        family: Family::Permission,
        summary: "a coordinator (highest id) with a FIFO queue: REQUEST, GRANT, RELEASE",
        kernel_lock: false,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            Theory::exact(3.0 * (n - 1.0) / n, "3(N-1)/N: 3 per entry, 0 for the coordinator's own")
        },
        claim: Some(Claim {
            messages: |_| "3 (notes)".into(),
            entry: |_| "2 (notes)".into(),
            sync: |_| "2: RELEASE, GRANT".into(),
            problems: "coordinator crash (notes)",
            coordinator_free: true,
            notes_entry: Some(NotesEntry {
                row: "Centralized",
                formula: |_| "2".into(),
                range: |_| (2.0, 2.0),
            }),
            entry_by_hops_of: None,
        }),
        check: check_queue::<centralized::Centralized>,
        symmetric: Some(check_queue_symmetric::<centralized::Centralized>),
        walk: walk_queue::<centralized::Centralized>,
        ..AlgoInfo::runs::<centralized::Centralized>()
    },
    AlgoInfo {
        name: "centralized-bully",
        measured_clean: Some(128),
        timer_fires: Some(1),
        family: Family::Permission,
        summary:
            "centralized with heartbeats and a bully election; the new coordinator rebuilds its queue from STATE",
        kernel_lock: false,
        majority: true,
        theory: |s| {
            let n = f64::from(s.n.max(1));
            Some(Theory::range(
                3.0 * (n - 1.0) / n,
                f64::INFINITY,
                "3(N-1)/N as centralized (2N+1 per ordinary entry and 2(N-1) for the \
                 coordinator's under --majority), plus HEARTBEATs while anyone waits and \
                 elections; unbounded above"
                    .into(),
            ))
        },
        claim: Some(Claim {
            messages: |_| "3, plus elections".into(),
            entry: |_| "2".into(),
            sync: |_| "2: RELEASE, GRANT".into(),
            problems: "lost messages stall a recovery; a paused coordinator stops all",
            coordinator_free: true,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        ..AlgoInfo::runs::<centralized_bully::CentralizedBully>()
    },
    AlgoInfo {
        name: "lamport",
        // Clocks past 10: n = 3, k = 2 completes in seconds (without, it ran out of memory).
        counter_bound: Some(10),
        measured_clean: Some(512),
        family: Family::Permission,
        summary:
            "a request queue on every node with Lamport clocks: REQUEST, ACK, RELEASE to all (needs FIFO)",
        kernel_lock: false,
        theory: |s| Theory::exact(3.0 * (f64::from(s.n.max(1)) - 1.0), "3(N-1)"),
        claim: Some(Claim {
            messages: |n| format!("3(N-1) = {}", 3 * (n - 1)),
            entry: |_| "2: REQUEST, ACK".into(),
            sync: |_| "1: RELEASE".into(),
            problems: "any crash (no ACK); lost messages",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        ..AlgoInfo::runs::<lamport::Lamport>()
    },
    AlgoInfo {
        name: "maekawa",
        measured_clean: Some(768),
        family: Family::Permission,
        summary:
            "grid quorums of about 2√N-1 voters; INQUIRE/YIELD/FAILED take votes back so it cannot deadlock",
        kernel_lock: false,
        theory: |s| {
            // Each node's entry costs 3(K-1) to 5(K-1) for its own quorum size K; over a
            // run where nodes enter equally often, that averages out to the mean K.
            let n = s.n.max(1);
            let (lo, hi) = maekawa::quorum_sizes(n);
            let k = maekawa::mean_quorum_size(n);
            Some(Theory {
                quorum_size: Some(k),
                ..Theory::range(
                    3.0 * (k - 1.0),
                    5.0 * (k - 1.0),
                    format!("3(K-1) to 5(K-1) on average, K = mean quorum size {k:.2} ({lo}..{hi})"),
                )
            })
        },
        claim: Some(Claim {
            messages: |n| {
                let k = maekawa::mean_quorum_size(n);
                format!("3(K-1) to 5(K-1) = {:.1}-{:.1}", 3.0 * (k - 1.0), 5.0 * (k - 1.0))
            },
            entry: |_| "2: REQUEST, LOCKED".into(),
            sync: |_| "2: RELEASE, LOCKED".into(),
            problems: "crash of a quorum member",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        ..AlgoInfo::runs::<maekawa::Maekawa>()
    },
    AlgoInfo {
        name: "ricart-agrawala",
        measured_clean: Some(512),
        family: Family::Permission,
        summary: "ask everyone with a ticket (highest seen + 1); deferred REPLYs serve as the release",
        kernel_lock: false,
        theory: |s| Theory::exact(2.0 * (f64::from(s.n.max(1)) - 1.0), "2(N-1)"),
        claim: Some(Claim {
            messages: |n| format!("2(N-1) = {} (notes)", 2 * (n - 1)),
            entry: |n| format!("2(N-1) = {} (notes)", 2 * (n - 1)),
            sync: |_| "1: a deferred REPLY".into(),
            problems: "any process crash (notes)",
            coordinator_free: false,
            notes_entry: Some(NotesEntry {
                row: "Distributed",
                formula: |n| format!("2(n-1) = {}", 2 * (n - 1)),
                range: |n| (f64::from(2 * (n - 1)), f64::from(2 * (n - 1))),
            }),
            entry_by_hops_of: None,
        }),
        ..AlgoInfo::runs::<ricart_agrawala::RicartAgrawala>()
    },
    AlgoInfo {
        name: "ricart-agrawala-rc",
        measured_clean: Some(512),
        family: Family::Permission,
        summary: "Ricart-Agrawala keeping permissions until asked (Roucairol-Carvalho): re-entry can be free",
        kernel_lock: false,
        theory: |s| {
            let max = 2.0 * (f64::from(s.n.max(1)) - 1.0);
            Some(Theory::range(0.0, max, "0 to 2(N-1)".into()))
        },
        claim: Some(Claim {
            messages: |n| format!("0 to 2(N-1) = {}", 2 * (n - 1)),
            entry: |_| "0 to 2".into(),
            sync: |_| "1: a REPLY".into(),
            problems: "any process crash",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        ..AlgoInfo::runs::<ricart_agrawala::RoucairolCarvalho>()
    },
    AlgoInfo {
        name: "voting",
        // Attempts past 1 (Node::counter: each node's attempt number): n = 3, k = 2
        // completes in seconds. It bounds hard: no node makes a second attempt, so the
        // second entries go no further than their REQUESTs. At 2 the space without any
        // retry alone was cut short at 3 M states in a minute, and 16 M in five (DFS).
        counter_bound: Some(1),
        measured_clean: Some(64),
        timer_fires: Some(1),
        family: Family::Permission,
        summary:
            "majority of m coordinators (--replicas, default N); DENY, release and random back-off on failure",
        kernel_lock: false,
        replicas: true,
        theory: |s| {
            let m = s.replicas.unwrap_or(s.n).clamp(1, s.n.max(1));
            let (n, mf) = (f64::from(s.n.max(1)), f64::from(m));
            Some(Theory {
                replicas: Some(m),
                ..Theory::range(
                    3.0 * mf - 3.0 * mf / n,
                    f64::INFINITY,
                    format!(
                        "3m-3m/N with no contention, m = {m} (none for one's own vote); \
                         unbounded above, as retries are"
                    ),
                )
            })
        },
        claim: Some(Claim {
            messages: |_| "2mk+m, k attempts (notes)".into(),
            entry: |_| "2mk (notes)".into(),
            sync: |_| "2 or more: back-off".into(),
            problems: "starvation, low efficiency (notes); amnesia after restart",
            coordinator_free: false,
            // m = N coordinators here (compare sets no --replicas).
            notes_entry: Some(NotesEntry {
                row: "Decentralized",
                formula: |n| format!("2mk, k = 1, 2, … attempts; m = {n}: {}k", 2 * n),
                range: |n| (f64::from(2 * n), f64::INFINITY),
            }),
            entry_by_hops_of: None,
        }),
        ..AlgoInfo::runs::<voting::Voting>()
    },
    AlgoInfo {
        name: "token-ring",
        few_peers: true,
        family: Family::Token,
        summary: "one TOKEN round a fixed ring 0→1→…→N-1→0; a token a full lap unused is held 1 ms per hop",
        kernel_lock: false,
        theory: |s| {
            if s.n <= 1 {
                return Theory::exact(0.0, "0: a lone node keeps the token");
            }
            Some(Theory::range(
                1.0,
                f64::INFINITY,
                "1 at saturation (the exit pass), up to N when others decline the token; \
                 unbounded above, as an idle ring keeps (slowly) passing it"
                    .into(),
            ))
        },
        claim: Some(Claim {
            messages: |_| "1 to ∞ (notes)".into(),
            entry: |n| format!("0 to N-1 = {} (notes); here an idle hop waits 1 ms", n - 1),
            sync: |n| format!("1 to N-1 = {}", n - 1),
            problems: "lost token, process crash (notes)",
            coordinator_free: false,
            notes_entry: Some(NotesEntry {
                row: "Token ring",
                formula: |n| format!("0 to n-1 = {}", n - 1),
                range: |n| (0.0, f64::from(n - 1)),
            }),
            entry_by_hops_of: Some("TOKEN"),
        }),
        check: check_tokens::<token_ring::TokenRing>,
        symmetric: Some(check_tokens_symmetric::<token_ring::TokenRing>),
        walk: walk_tokens::<token_ring::TokenRing>,
        bypass: Some(Bypass {
            bound: |n| n.saturating_sub(1),
            claim: "notes: \"Order well-defined; starvation cannot occur\": the token reaches a waiting node \
                    within one lap, each other node entering at most once on the way",
        }),
        ..AlgoInfo::runs::<token_ring::TokenRing>()
    },
    AlgoInfo {
        name: "token-ring-ft",
        measured_clean: Some(1024),
        timer_fires: Some(1),
        family: Family::Token,
        summary: "token-ring with generations: a lost TOKEN is made again after an ELECTION lap its holder would stop",
        kernel_lock: false,
        theory: |s| {
            if s.n <= 1 {
                return Theory::exact(0.0, "0: a lone node keeps the token");
            }
            Some(Theory::range(
                1.0,
                f64::INFINITY,
                "as token-ring: 1 at saturation, up to N with declines; plus M ELECTIONs \
                 (2M-1 at worst) per token made again among M live nodes; unbounded above"
                    .into(),
            ))
        },
        claim: Some(Claim {
            messages: |_| "1 to ∞, plus a ring election per lost token".into(),
            entry: |n| format!("0 to N-1 = {}; an idle hop waits 1 ms", n - 1),
            sync: |n| format!("1 to N-1 = {}", n - 1),
            problems: "survives a lost token by regenerating it",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: Some("TOKEN"),
        }),
        ..AlgoInfo::runs::<token_ring_ft::TokenRingFt>()
    },
    AlgoInfo {
        name: "suzuki-kasami",
        measured_clean: Some(1024),
        family: Family::Token,
        summary:
            "broadcast a numbered REQUEST; the TOKEN carries each node's last served request and a queue",
        kernel_lock: false,
        theory: n_per_token_move,
        claim: Some(Claim {
            messages: |n| format!("0 or N = {n}"),
            entry: |_| "0 or 2".into(),
            sync: |_| "1: TOKEN".into(),
            problems: "holder crash loses the token",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        check: check_tokens::<suzuki_kasami::SuzukiKasami>,
        symmetric: Some(check_tokens_symmetric::<suzuki_kasami::SuzukiKasami>),
        walk: walk_tokens::<suzuki_kasami::SuzukiKasami>,
        ..AlgoInfo::runs::<suzuki_kasami::SuzukiKasami>()
    },
    AlgoInfo {
        name: "ra-token",
        measured_clean: Some(1024),
        family: Family::Token,
        summary:
            "the notes' Ricart-Agrawala token passing: a TOKEN with granted[] and no queue, to the next waiter round the ring",
        kernel_lock: false,
        theory: n_per_token_move,
        claim: Some(Claim {
            messages: |n| format!("0 or N = {n}"),
            entry: |_| "0 or 2".into(),
            sync: |_| "1: TOKEN".into(),
            problems: "holder crash loses the token",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        check: check_tokens::<ra_token::RaToken>,
        symmetric: Some(check_tokens_symmetric::<ra_token::RaToken>),
        walk: walk_tokens::<ra_token::RaToken>,
        ..AlgoInfo::runs::<ra_token::RaToken>()
    },
    AlgoInfo {
        name: "raymond",
        few_peers: true,
        family: Family::Token,
        summary:
            "a token on a fixed binary tree; REQUESTs climb towards it, per-node FIFO queues route it back",
        kernel_lock: false,
        theory: |s| {
            let d = raymond::diameter(s.n.max(1));
            let formula =
                format!("0 (holder re-enters) to 2D = {}, D = {d} the binary tree's diameter", 2 * d);
            Some(Theory::range(0.0, f64::from(2 * d), formula))
        },
        claim: Some(Claim {
            messages: |n| format!("0 to 2D = {}", 2 * raymond::diameter(n)),
            entry: |n| format!("0 to 2D = {}", 2 * raymond::diameter(n)),
            sync: |n| format!("1 to D = {}", raymond::diameter(n)),
            problems: "a crash cuts the tree or loses the token",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        check: check_tokens::<raymond::Raymond>,
        walk: walk_tokens::<raymond::Raymond>,
        ..AlgoInfo::runs::<raymond::Raymond>()
    },
    AlgoInfo {
        name: "neilsen-mizuno",
        few_peers: true,
        family: Family::Token,
        summary:
            "a token and a tree whose parent links follow the last requester; the TOKEN goes straight to it",
        kernel_lock: false,
        theory: |s| {
            let d = neilsen_mizuno::diameter(s.n.max(1));
            let formula =
                format!("0 (holder re-enters) to D+1 = {}, D = {d} the initial chain's length", d + 1);
            Some(Theory::range(0.0, f64::from(d + 1), formula))
        },
        claim: Some(Claim {
            messages: |n| format!("0 to D+1 = {}", neilsen_mizuno::diameter(n) + 1),
            entry: |n| format!("0 to D+1 = {}", neilsen_mizuno::diameter(n) + 1),
            sync: |_| "1: TOKEN".into(),
            problems: "a crash cuts the tree or loses the token",
            coordinator_free: false,
            notes_entry: None,
            entry_by_hops_of: None,
        }),
        check: check_tokens::<neilsen_mizuno::NeilsenMizuno>,
        walk: walk_tokens::<neilsen_mizuno::NeilsenMizuno>,
        ..AlgoInfo::runs::<neilsen_mizuno::NeilsenMizuno>()
    },
    AlgoInfo {
        name: "bully",
        // Terms past 8: n = 3, k = 2 completes in under a minute (without, it ran out of memory).
        counter_bound: Some(8),
        timer_fires: Some(1),
        family: Family::Election,
        summary:
            "ELECTION to every higher id, ANSWER from the live ones, COORDINATOR from the one nobody answers",
        highest_wins: true,
        theory: |s| election_theory(bully::messages_per_election(s.n), "M-1 (the highest starts) to M²-1"),
        ..AlgoInfo::runs::<bully::Bully>()
    },
    AlgoInfo {
        name: "bully-gm",
        // Terms past 5: n = 3, k = 2 completes in under a minute breadth-first.
        counter_bound: Some(5),
        timer_fires: Some(1),
        family: Family::Election,
        summary: "Garcia-Molina's four phases: STATUS_POLL up, ELECTION down, COORDINATOR, NEW_STATE; the leader polls",
        highest_wins: true,
        theory: |s| {
            election_theory(bully_gm::messages_per_election(s.n), "6(M-1) (the highest starts) to (M-1)(M+6)")
        },
        messages: crate::external::message_shapes_with::<bully_gm::Msg, (bully_gm::Status,)>,
        ..AlgoInfo::runs::<bully_gm::BullyGm>()
    },
    AlgoInfo {
        name: "chang-roberts",
        family: Family::Ring,
        summary: "the largest id goes once round a one-way ring, then ELECTED goes round once",
        highest_wins: true,
        theory: |s| election_theory(chang_roberts::messages_per_election(s.n), "2M to 3M-1 on a rising ring"),
        ..AlgoInfo::runs::<chang_roberts::ChangRoberts>()
    },
    AlgoInfo {
        name: "chang-roberts-down",
        family: Family::Ring,
        summary: "chang-roberts the other way round, ids falling along the ring: the notes' O(N²) worst case",
        highest_wins: true,
        theory: |s| {
            election_theory(chang_roberts::messages_per_election_down(s.n), "2M to M(M+1)/2 + M (all start)")
        },
        ..AlgoInfo::runs::<chang_roberts::ChangRobertsDown>()
    },
    AlgoInfo {
        name: "hirschberg-sinclair",
        timer_fires: Some(1),
        family: Family::Ring,
        summary: "probes both ways to distance 2^k in phase k; a candidate whose probes come home wins: O(N log N)",
        highest_wins: true,
        theory: |s| {
            election_theory(hirschberg_sinclair::messages_per_election(s.n), "under 8M(⌈log₂M⌉+1)")
        },
        messages: crate::external::message_shapes_with::<hirschberg_sinclair::Msg, (hirschberg_sinclair::Dir,)>,
        ..AlgoInfo::runs::<hirschberg_sinclair::HirschbergSinclair>()
    },
    AlgoInfo {
        name: "superpeer",
        family: Family::Election,
        summary: "super-peers: HELLO places, a cover election in rank order within the latency bound, a coordinator adds the share and joins the rest with capacity; orphans re-homed",
        theory: |s| {
            let m = u64::from(s.n);
            let (lo, hi) = (superpeer::messages(m, 0), superpeer::messages(m, m * m.saturating_sub(1) / 2));
            election_theory((lo, hi), "M(M-1) HELLO + a DECIDED per pair within the bound + 2(M-1)")
        },
        ..AlgoInfo::runs::<superpeer::SuperPeer>()
    },
    AlgoInfo {
        name: "superpeer-cells",
        family: Family::Election,
        summary: "super-peers for thousands: group heads gather places by id, each latency cell's directory elects the cell's super-peers (its share, its capacity); nobody talks to all",
        // A node talks to its group's head and its cell's directory only.
        few_peers: true,
        theory: |s| {
            let (lo, hi) = superpeer_cells::messages(s.n);
            let formula = "(N-H) JOIN + 16H BUNDLE + N ROLE less a directory's own, H = ⌈N/32⌉ heads, N = workers";
            Some(Theory::range(lo as f64, hi as f64, formula.into()))
        },
        ..AlgoInfo::runs::<superpeer_cells::SuperPeerCells>()
    },
    AlgoInfo {
        name: "ring-list",
        family: Family::Ring,
        summary: "ELECTION collects the live ids round the ring; its initiator announces the highest",
        highest_wins: true,
        theory: |s| {
            let (lo, hi) = ring_list::messages_per_election(s.n);
            // Each initiator's lap and announcement cost 2M.
            let k = u64::from(s.initiators.max(1));
            election_theory((lo, (lo * k).min(hi)), "2M per initiator")
        },
        ..AlgoInfo::runs::<ring_list::RingList>()
    },
];

/// `suzuki-kasami` and `ra-token`: an entry costs N when the token moves (N-1 REQUESTs
/// and the TOKEN), nothing when its holder re-enters unasked.
fn n_per_token_move(s: Shape) -> Option<Theory> {
    let n = s.n.max(1);
    if n == 1 {
        return Theory::exact(0.0, "0: a lone node keeps the token");
    }
    let formula = format!("0 (holder re-enters unasked) to N = {n} (N-1 REQUESTs + 1 TOKEN)");
    Some(Theory::range(0.0, f64::from(n), formula))
}

/// Messages per election between two bounds, M the number of live workers.
fn election_theory((lo, hi): (u64, u64), formula: &str) -> Option<Theory> {
    Some(Theory::range(lo as f64, hi as f64, format!("{formula}, M = live workers")))
}
