//! `mutexlab`: the command line with the algorithms the lab ships. Everything is in the
//! library ([`mutexlab::cli`]), so a crate with algorithms of its own can build the same
//! command line around its own registry.

fn main() -> std::process::ExitCode {
    mutexlab::cli::main(mutexlab::registry::Registry::builtin())
}
