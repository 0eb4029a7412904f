//! Reading a fault plan: its text, step by step, into a [`Plan`] whose worker ids,
//! groups and restarts are checked against the run's workers, with an error that quotes
//! the step and says what was expected.

use std::time::Duration;

use super::*;

/// The words that start a step, for an error: `kill, term, … or delay`.
pub(super) fn actions() -> String {
    FaultKind::names(FaultKind::is_step)
}
const LINKS: &str =
    "`A->B` (worker A's messages to B), a worker id (every message it sends or receives) or `all` (every message)";
const TARGETS: &str = "a worker id, `holder`, `coordinator` or `leader`";
const GROUPS_EXAMPLE: &str = "`0,1|2,3`";

impl Plan {
    /// Parses and checks a plan written in the grammar of the module documentation.
    ///
    /// Steps are separated by `;` or newlines; `#` comments run to the end of the line and
    /// blank steps are skipped. Errors give the 1-based number of the step among the
    /// non-empty ones, its trimmed text, and what is wrong with which word.
    ///
    /// Checks beyond the grammar:
    /// - every worker id is below `workers`;
    /// - partition groups are non-empty and disjoint, and there are at least two of them or
    ///   the single group leaves some workers out (those form the other side);
    /// - `for` appears only on `stop`, `partition`, `drop` and `delay`, and is not zero;
    /// - a `drop` or `delay` names links between two different workers, and a delay
    ///   above zero;
    /// - no `restart N` hits a worker that is surely alive. The time-based steps are
    ///   replayed in time order (steps at the same time in written order): `kill`/`term`
    ///   of worker N makes it dead, `restart N` alive again. Steps the supervisor resolves
    ///   only at run time are treated leniently: a time-based `kill`/`term` of `holder`
    ///   makes every worker possibly dead, one of `coordinator` the highest-id worker, and
    ///   a `kill`/`term` of N, `holder` or `coordinator` at `entry K` may fire at any time,
    ///   so time-based restarts of the workers it may hit are not checked. A restart at
    ///   `entry K` cannot be placed in time at all; it is accepted only if some step of
    ///   the plan (at any time) kills or terms N, `holder` or `coordinator`.
    ///
    /// A plan of more than [`MAX_PLAN_STEPS`] steps is refused at the first step beyond,
    /// before it is parsed. An error quotes at most 120 characters of the step and of
    /// any word in it, with control characters escaped.
    pub fn parse(text: &str, workers: u32) -> Result<Plan, PlanError> {
        let mut steps = Vec::new();
        let mut texts: Vec<&str> = Vec::new();
        let error = |index: usize, step: &str, why: String| PlanError {
            index,
            step: clip(step),
            why: why.chars().flat_map(escape_control).collect(),
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for piece in line.split(';') {
                let piece = piece.trim();
                if piece.is_empty() {
                    continue;
                }
                let index = texts.len() + 1;
                if texts.len() == MAX_PLAN_STEPS {
                    let why = format!("too many steps: a plan holds at most {MAX_PLAN_STEPS}");
                    return Err(error(index, piece, why));
                }
                let step = parse_step(piece, workers).map_err(|why| error(index, piece, why))?;
                steps.push(step);
                texts.push(piece);
            }
        }
        if let Err((i, why)) = check_restarts(&steps, workers) {
            return Err(error(i + 1, texts[i], why));
        }
        Ok(Plan { steps })
    }

    /// True if any step fires at `entry K` rather than at a time.
    pub fn needs_entries(&self) -> bool {
        self.steps.iter().any(|s| matches!(s.when, When::Entry(_)))
    }

    /// The latest moment a time-based step still acts: its time plus its `for`, if any.
    /// Zero when there are no time-based steps.
    pub fn last_time(&self) -> Duration {
        self.steps
            .iter()
            .filter_map(|s| match s.when {
                When::At(at) => Some(at.saturating_add(s.duration.unwrap_or(Duration::ZERO))),
                When::Entry(_) => None,
            })
            .max()
            .unwrap_or(Duration::ZERO)
    }
}

/// At most [`QUOTE_CHARS`] characters of `s`, then `…` if it was longer.
pub(super) fn clip(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

/// A control character as an escape (`\0`, `\r`), anything else as itself: an error
/// line must not carry raw control characters to the terminal.
pub(super) fn escape_control(c: char) -> Vec<char> {
    if c.is_control() {
        c.escape_debug().collect()
    } else {
        vec![c]
    }
}

/// The words of one step, read left to right (lazily: a step may be long).
pub(super) struct Words<'a> {
    words: std::iter::Peekable<std::str::SplitWhitespace<'a>>,
}

impl<'a> Words<'a> {
    fn peek(&mut self) -> Option<&'a str> {
        self.words.peek().copied()
    }

    fn next(&mut self) -> Option<&'a str> {
        self.words.next()
    }
}

pub(super) fn found(w: Option<&str>) -> String {
    match w {
        Some(w) => format!("`{}`", clip(w)),
        None => "end of step".to_string(),
    }
}

pub(super) fn no_such_worker(id: &str, workers: u32) -> String {
    if workers == 0 {
        format!("worker {} does not exist (there are no workers)", clip(id))
    } else {
        format!("worker {} does not exist (workers are 0..={})", clip(id), workers - 1)
    }
}

/// `Some` if `word` is written as a worker id (decimal digits), with the range check done.
pub(super) fn worker_number(word: &str, workers: u32) -> Option<Result<u32, String>> {
    if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(match word.parse::<u32>() {
        Ok(n) if n < workers => Ok(n),
        _ => Err(no_such_worker(word, workers)),
    })
}

pub(super) fn parse_step(text: &str, workers: u32) -> Result<Step, String> {
    let mut w = Words { words: text.split_whitespace().peekable() };
    let verb = w.next().unwrap_or("");
    let unknown = || format!("unknown action `{}`; expected {}", clip(verb), actions());
    let Some(kind) = FaultKind::from_name(verb) else { return Err(unknown()) };
    let action = match kind {
        FaultKind::Kill | FaultKind::Term | FaultKind::Stop => {
            let target = match w.next() {
                Some("holder") => Target::Holder,
                Some("coordinator") => Target::Coordinator,
                Some("leader") => Target::Leader,
                Some("at") => return Err(format!("`{verb}` needs a target before `at`: {TARGETS}")),
                None => return Err(format!("`{verb}` needs a target: {TARGETS}")),
                Some(t) => match worker_number(t, workers) {
                    Some(r) => Target::Worker(r?),
                    None => return Err(format!("bad target `{}`: expected {TARGETS}", clip(t))),
                },
            };
            match kind {
                FaultKind::Kill => Action::Kill(target),
                FaultKind::Term => Action::Term(target),
                _ => Action::Stop(target),
            }
        }
        FaultKind::Restart => match w.next() {
            Some("at") => return Err("`restart` needs a worker id before `at`".to_string()),
            None => return Err("`restart` needs a worker id".to_string()),
            Some(t) => match worker_number(t, workers) {
                Some(r) => Action::Restart(r?),
                None => return Err(format!("`restart` needs a worker id, found `{}`", clip(t))),
            },
        },
        FaultKind::Partition => Action::Partition(Partition { groups: parse_groups(&mut w, workers)? }),
        FaultKind::Heal => Action::Heal,
        FaultKind::Drop => {
            let p = match w.next() {
                None | Some("at") => return Err("`drop` needs a probability, like `drop 0.3 1->2`".into()),
                Some(p) => Probability::parse(p)?,
            };
            Action::Drop(p, parse_links(&mut w, verb, workers)?)
        }
        FaultKind::Delay => {
            if matches!(w.peek(), None | Some("at")) {
                return Err("`delay` needs a duration, like `delay 20ms 1->2`".into());
            }
            let d = take_duration(&mut w)?;
            if d.is_zero() {
                return Err("`delay` needs a duration above zero".into());
            }
            Action::Delay(d, parse_links(&mut w, verb, workers)?)
        }
        // Records of what the supervisor did, never written in a plan.
        FaultKind::Cont
        | FaultKind::Skip
        | FaultKind::Teardown
        | FaultKind::WriteRefused
        | FaultKind::Restore => return Err(unknown()),
    };
    match w.next() {
        Some("at") => {}
        other => return Err(format!("expected `at`, found {}", found(other))),
    }
    let when = match w.peek() {
        None => {
            return Err("expected a time (like `300ms`) or `entry K` after `at`, found end of step".into())
        }
        Some("entry") => {
            w.next();
            match w.next() {
                None => return Err("expected an entry number after `entry`, found end of step".into()),
                Some(k) => match k.parse::<u64>() {
                    Ok(0) => return Err(format!("bad entry number `{}`: entries count from 1", clip(k))),
                    Ok(n) if k.bytes().all(|b| b.is_ascii_digit()) => When::Entry(n),
                    _ => {
                        return Err(format!(
                            "bad entry number `{}`: expected a whole number from 1 up",
                            clip(k)
                        ))
                    }
                },
            }
        }
        Some(_) => When::At(take_duration(&mut w)?),
    };
    let for_ok = action.takes_for();
    let duration = match w.peek() {
        None => None,
        Some("for") if !for_ok => return Err("`for` only applies to stop, partition, drop and delay".into()),
        Some("for") => {
            w.next();
            if w.peek().is_none() {
                return Err("expected a duration after `for`, found end of step".into());
            }
            let d = take_duration(&mut w)?;
            if d.is_zero() {
                return Err("`for` needs a duration above zero".into());
            }
            Some(d)
        }
        Some(x) if for_ok => return Err(format!("expected `for` or end of step, found `{}`", clip(x))),
        Some(x) => return Err(format!("expected end of step, found `{}`", clip(x))),
    };
    if let Some(x) = w.peek() {
        return Err(format!("expected end of step, found `{}`", clip(x)));
    }
    Ok(Step { action, when, duration })
}

/// Reads the links of a `drop` or `delay` step: `A->B`, a worker id or `all`.
pub(super) fn parse_links(w: &mut Words<'_>, verb: &str, workers: u32) -> Result<Links, String> {
    let word = match w.next() {
        None | Some("at") => return Err(format!("`{verb}` needs links: {LINKS}")),
        Some("all") => return Ok(Links::All),
        Some(word) => word,
    };
    let id = |t: &str| match worker_number(t, workers) {
        Some(r) => r,
        None => Err(format!("bad links `{}`: expected {LINKS}", clip(word))),
    };
    match word.split_once("->") {
        Some((a, b)) => {
            let (a, b) = (id(a)?, id(b)?);
            if a == b {
                return Err(format!("bad links `{}`: a worker sends no message to itself", clip(word)));
            }
            Ok(Links::Link(a, b))
        }
        None => Ok(Links::Worker(id(word)?)),
    }
}

/// Reads a duration: one word (`300ms`), or a bare number and the next word (`300 ms`),
/// in which case both are quoted if they do not make a duration (`3 parsecs`).
pub(super) fn take_duration(w: &mut Words<'_>) -> Result<Duration, String> {
    let first = w.next().unwrap_or("");
    let mut shown = first.to_string();
    let mut joined = first.to_string();
    let bare = !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if bare {
        if let Some(unit) = w.peek().filter(|u| *u != "for") {
            w.next();
            shown = format!("{first} {unit}");
            joined.push_str(unit);
        }
    }
    parse_duration(&joined).map_err(|why| format!("bad duration `{}`: {why}", clip(&shown)))
}

/// A time, as humantime reads it: a number with a unit (`300ms`, `1.5s`, `2m`, `250us`),
/// or several run together (`1m30s`); fractions are exact to the nanosecond and finer
/// ones are refused. Every duration the command line takes goes through here: fault
/// plans, `run --duration` (which also takes bare seconds) and `trace --from`/`--to`.
/// At most `u64::MAX` nanoseconds (some 584 years), the most a plan's time holds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    use humantime::DurationError as E;
    match humantime::parse_duration(text) {
        Ok(d) if d.as_nanos() > u128::from(u64::MAX) => Err("too long".into()),
        Ok(d) => Ok(d),
        // "time unit needed, for example 300sec or 300ms", "unknown time unit …".
        Err(e @ E::UnknownUnit { .. }) => Err(crate::text::clip_to(&e.to_string(), 300).into_owned()),
        Err(E::NumberOverflow) => Err("too long, or finer than a nanosecond".into()),
        // Its other errors give an offset into the word; the word is quoted already.
        Err(_) => Err("use a number and a unit, like 300ms, 1.5s or 2m".into()),
    }
}

/// Partition groups: the words up to `at` that start with a digit, `,` or `|`, joined.
pub(super) fn parse_groups(w: &mut Words<'_>, workers: u32) -> Result<Vec<Vec<u32>>, String> {
    let mut text = String::new();
    while let Some(word) = w.peek() {
        if word != "at" && word.starts_with(|c: char| c.is_ascii_digit() || c == ',' || c == '|') {
            text.push_str(word);
            w.next();
        } else {
            break;
        }
    }
    if text.is_empty() {
        return Err(format!("`partition` needs groups like {GROUPS_EXAMPLE}, found {}", found(w.peek())));
    }
    let mut owner: Vec<Option<usize>> = vec![None; workers as usize];
    let mut groups: Vec<Vec<u32>> = Vec::new();
    // The texts of the groups read so far (not split up front: `|||…` may be long).
    let mut texts: Vec<&str> = Vec::new();
    for (gi, g) in text.split('|').enumerate() {
        if g.is_empty() {
            return Err(format!("empty partition group in `{}`", clip(&text)));
        }
        let mut group = Vec::new();
        for id in g.split(',') {
            if id.is_empty() {
                return Err(format!("missing worker id in partition group `{}`", clip(g)));
            }
            let n = match worker_number(id, workers) {
                Some(r) => r?,
                None => return Err(format!("bad worker id `{}` in partition group `{}`", clip(id), clip(g))),
            };
            match owner[n as usize] {
                Some(o) if o == gi => {
                    return Err(format!("worker {n} is listed twice in partition group `{}`", clip(g)));
                }
                Some(o) => {
                    return Err(format!(
                        "a worker appears in two partition groups (worker {n} in `{}` and `{}`)",
                        clip(texts[o]),
                        clip(g)
                    ));
                }
                None => owner[n as usize] = Some(gi),
            }
            group.push(n);
        }
        groups.push(group);
        texts.push(g);
    }
    if groups.len() == 1 && groups[0].len() == workers as usize {
        return Err(format!(
            "partition group `{}` holds every worker; give at least two groups or leave some workers out",
            clip(&text)
        ));
    }
    Ok(groups)
}

/// The restart rule of [`Plan::parse`]; on failure, the step's 0-based index and why.
pub(super) fn check_restarts(steps: &[Step], workers: u32) -> Result<(), (usize, String)> {
    let n = workers as usize;
    let highest = n.checked_sub(1);
    // Workers an entry-based kill or term may hit at any moment.
    let mut wild = vec![false; n];
    for s in steps {
        if let (Action::Kill(t) | Action::Term(t), When::Entry(_)) = (&s.action, s.when) {
            match t {
                Target::Worker(w) => wild[*w as usize] = true,
                Target::Holder | Target::Leader => wild.iter_mut().for_each(|x| *x = true),
                Target::Coordinator => {
                    if let Some(h) = highest {
                        wild[h] = true;
                    }
                }
            }
        }
    }
    // Restarts at `entry K`: some step must be able to make the worker dead. Who can be
    // killed is gathered in one pass, so a long plan costs linear time, not quadratic.
    let mut killed = vec![false; n];
    let mut anyone_killed = false;
    for s in steps {
        if let Action::Kill(t) | Action::Term(t) = &s.action {
            match t {
                Target::Worker(w) => killed[*w as usize] = true,
                Target::Holder | Target::Coordinator | Target::Leader => anyone_killed = true,
            }
        }
    }
    for (i, s) in steps.iter().enumerate() {
        if let (Action::Restart(r), When::Entry(k)) = (&s.action, s.when) {
            if !anyone_killed && !killed[*r as usize] {
                return Err((
                    i,
                    format!(
                        "restart {r} at entry {k}: no step kills or terms worker {r}, `holder`, \
                         `coordinator` or `leader`, so worker {r} is never dead"
                    ),
                ));
            }
        }
    }
    // Time-based steps in time order; equal times keep their written order.
    let mut timed: Vec<(Duration, usize)> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s.when {
            When::At(at) => Some((at, i)),
            When::Entry(_) => None,
        })
        .collect();
    timed.sort_by_key(|&(at, _)| at);
    let mut surely_alive = vec![true; n];
    for (at, i) in timed {
        match &steps[i].action {
            Action::Kill(t) | Action::Term(t) => match t {
                Target::Worker(w) => surely_alive[*w as usize] = false,
                Target::Holder | Target::Leader => surely_alive.iter_mut().for_each(|x| *x = false),
                Target::Coordinator => {
                    if let Some(h) = highest {
                        surely_alive[h] = false;
                    }
                }
            },
            Action::Restart(r) => {
                let r = *r as usize;
                if surely_alive[r] && !wild[r] {
                    return Err((
                        i,
                        format!(
                            "restart {r} at {}: worker {r} is alive then (no earlier kill or term)",
                            When::At(at)
                        ),
                    ));
                }
                surely_alive[r] = true;
            }
            _ => {}
        }
    }
    Ok(())
}
