//! `mutexlab man` and `mutexlab completions`: the command line described with the
//! installed registry's algorithm names, as man pages (the fault-plan grammar kept as
//! written) and for clap_complete.

use super::{out, Cli, WHO};
use crate::algorithm::ServiceKind;
use crate::exit::{Error, Outcome, Verdict};
use crate::registry;
use std::path::PathBuf;

/// The name the program was started by (`mutexlab`, or an outside crate's binary), which
/// completions complete and man pages name.
pub(super) fn bin_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| PathBuf::from(a).file_name().and_then(|f| f.to_str()).map(str::to_string))
        .unwrap_or_else(|| WHO.to_string())
}

/// The command line as completions and man pages describe it: its own definition, with
/// the installed registry's names as the values of every flag that takes an algorithm.
/// Parsing keeps taking any string there (`--algo` labels a `--worker-cmd` program, and
/// names are read in any case), so the names are added here only.
pub(super) fn described() -> clap::Command {
    use clap::builder::{PossibleValue, PossibleValuesParser};
    use clap::CommandFactory;
    let names = |service: Option<ServiceKind>| {
        let values = registry::registry()
            .iter()
            .filter(move |a| service.is_none_or(|s| a.service == s))
            .map(|a| PossibleValue::new(a.name).help(a.summary));
        PossibleValuesParser::new(values)
    };
    let algo = |service| move |a: clap::Arg| a.value_parser(names(service));
    // Without the hidden commands, which static completions would offer.
    let full = Cli::command();
    clap::Command::new(bin_name())
        .version(full.get_version().unwrap_or_default().to_string())
        .about(full.get_about().cloned().unwrap_or_default())
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
        .mut_subcommand("run", |c| c.mut_arg("algo", algo(Some(ServiceKind::Mutex))))
        .mut_subcommand("elect", |c| c.mut_arg("algo", algo(Some(ServiceKind::Election))))
        .mut_subcommand("compare", |c| c.mut_arg("algos", algo(Some(ServiceKind::Mutex))))
        .mut_subcommand("check", |c| c.mut_arg("algo", algo(None)))
        .mut_subcommand("sim", |c| c.mut_arg("algo", algo(None)))
        .mut_subcommand("algorithms", |c| c.mut_arg("messages", algo(None)))
}

/// `mutexlab man`: the main page on stdout, or every page into a directory.
pub(super) fn cmd_man(dir: Option<&std::path::Path>) -> Outcome {
    // As clap_mangen::generate_to builds it (`help` is not a page).
    let mut cmd = described().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = dir else {
        out(&String::from_utf8_lossy(&man_page(&cmd)));
        return Ok(Verdict::Pass);
    };
    let cannot = |e: std::io::Error| Error::usage(format!("cannot write {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    let mut pages = vec![&cmd];
    pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()));
    let mut written = Vec::new();
    for page in pages {
        let path = dir.join(clap_mangen::Man::new(page.clone()).get_filename());
        std::fs::write(&path, man_page(page)).map_err(cannot)?;
        written.push(format!("{}\n", path.display()));
    }
    written.sort();
    out(&written.concat());
    Ok(Verdict::Pass)
}

/// One man page, as clap_mangen renders it but for the text after the options (the
/// fault-plan grammar), whose lines are kept as they are rather than filled, and with
/// the exit codes every command shares.
fn man_page(cmd: &clap::Command) -> Vec<u8> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut w = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = (|| -> std::io::Result<()> {
        man.render_title(&mut w)?;
        man.render_name_section(&mut w)?;
        man.render_synopsis_section(&mut w)?;
        man.render_description_section(&mut w)?;
        man.render_options_section(&mut w)?;
        if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
            man.render_subcommands_section(&mut w)?;
        }
        if let Some(after) = cmd.get_after_long_help() {
            let mut r = roff::Roff::new();
            r.control("SH", ["FAULT PLANS"]).control("nf", []);
            for line in after.to_string().lines() {
                r.text([roff::roman(line)]);
            }
            r.control("fi", []).to_writer(&mut w)?;
        }
        exit_status().to_writer(&mut w)?;
        if cmd.get_version().is_some() {
            man.render_version_section(&mut w)?;
        }
        Ok(())
    })();
    w
}

/// The EXIT STATUS section: the codes [`crate::exit`] maps every outcome to, as the
/// README's table gives them.
fn exit_status() -> roff::Roff {
    let mut r = roff::Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    for (code, means) in crate::exit::DOCUMENTED {
        r.control("TP", []).text([roff::bold(code.to_string())]).text([roff::roman(means)]);
    }
    r
}
