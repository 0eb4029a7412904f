//! `mutexlab algorithms`: the registry's algorithms listed, or the messages each sends
//! as text, JSON or the Markdown table of labs/PROTOCOL.md.

use clap::Args;

use super::{out, to_json};
use crate::algorithm::ServiceKind;
use crate::exit::{Error, Outcome, Verdict};
use crate::{output, registry};

#[derive(Args)]
pub(super) struct AlgorithmsArgs {
    /// Print the JSON of every message of algorithm NAME (of every algorithm without
    /// NAME), as a program among its workers sends it (labs/PROTOCOL.md).
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    messages: Option<String>,
    /// Print one JSON object instead of the list.
    #[arg(long)]
    json: bool,
    /// With --messages: print the Markdown table labs/PROTOCOL.md holds.
    #[arg(long, requires = "messages", conflicts_with = "json")]
    markdown: bool,
}

/// `mutexlab algorithms`: the list, or the messages of one algorithm or all.
pub(super) fn cmd_algorithms(a: AlgorithmsArgs) -> Outcome {
    let algos: Vec<&registry::AlgoInfo> = match a.messages.as_deref() {
        None | Some("") => registry::registry().iter().collect(),
        Some(name) => vec![registry::lookup(name).map_err(Error::usage)?],
    };
    let shapes = |algo: &registry::AlgoInfo| {
        (algo.messages)().map_err(|e| Error::failed(format!("the messages of {}: {e}", algo.name)))
    };
    if a.markdown {
        out(&registry::messages_markdown(algos.iter().copied()).map_err(Error::failed)?);
        return Ok(Verdict::Pass);
    }
    if a.json {
        let mut algorithms = Vec::new();
        for algo in &algos {
            algorithms.push(output::AlgorithmEntry {
                name: algo.name,
                service: algo.service,
                family: algo.family,
                summary: algo.summary,
                messages: if a.messages.is_some() { Some(shapes(algo)?) } else { None },
            });
        }
        // Through a JSON value, whose keys are in order, as the output always had them.
        let value =
            serde_json::to_value(output::AlgorithmList { schema: output::ALGORITHMS_SCHEMA, algorithms })
                .expect("the list serialises");
        out(&to_json(&value));
        return Ok(Verdict::Pass);
    }
    let mut text = String::new();
    if a.messages.is_some() {
        for algo in &algos {
            let shapes = shapes(algo)?;
            if shapes.is_empty() {
                text.push_str(&format!("{}: sends no messages\n", algo.name));
                continue;
            }
            text.push_str(&format!("{}:\n", algo.name));
            text.push_str(&crate::text::columns(
                None,
                shapes.iter().map(|m| vec![m.tag.to_string(), m.shape()]),
                "  ",
            ));
        }
        out(&text);
        return Ok(Verdict::Pass);
    }
    for (service, title) in [
        (ServiceKind::Mutex, "Mutual exclusion (mutexlab run)"),
        (ServiceKind::Election, "Elections (mutexlab elect)"),
    ] {
        text.push_str(&format!("{title}:\n"));
        let rows = algos.iter().filter(|a| a.service == service);
        let rows = rows.map(|a| vec![a.name.to_string(), a.family.to_string(), a.summary.to_string()]);
        text.push_str(&crate::text::columns(None, rows, "  "));
    }
    out(&text);
    Ok(Verdict::Pass)
}
