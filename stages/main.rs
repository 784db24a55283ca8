//! `trawl`: the one executable. Every stage and tool is a subcommand (`trawl fetch ARGS`),
//! and the same executable run under a stage's name (`fetch ARGS`, a link to it that
//! `trawl --install-links` makes, as busybox does) runs that stage: the stage names of
//! the design, the scripts and the docs keep working with one binary to build and link.
//!
//! The commands and their one-line descriptions are the library's registry
//! ([`trawl::cli::COMMANDS`]); [`entry`] maps each name to its module here.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use trawl::cli::{COMMANDS, exit};

mod check;
mod crawl;
mod dedup;
mod docparse;
mod fetch;
mod gc;
mod generate;
mod hostdb;
mod index;
mod inject;
mod linkdb;
mod mergesegs;
mod pagerank;
mod parse;
mod plan;
mod prunesegs;
mod readdb;
mod readhostdb;
mod readlinkdb;
mod readseg;
mod repartition;
mod report;
mod search;
mod sitemap;
mod updatedb;
mod warc;

trawl::global_allocator!();

/// A command's entry point: its arguments, `args[0]` being its name.
type Entry = fn(Vec<OsString>) -> ExitCode;

/// The entry point of the command `name` of the registry; `None` for a name that is
/// not a command.
fn entry(name: &str) -> Option<Entry> {
    Some(match name {
        "check" => check::main,
        "crawl" => crawl::main,
        "dedup" => dedup::main,
        "docparse" => docparse::main,
        "fetch" => fetch::main,
        "gc" => gc::main,
        "generate" => generate::main,
        "hostdb" => hostdb::main,
        "index" => index::main,
        "inject" => inject::main,
        "linkdb" => linkdb::main,
        "mergesegs" => mergesegs::main,
        "pagerank" => pagerank::main,
        "parse" => parse::main,
        "plan" => plan::main,
        "prunesegs" => prunesegs::main,
        "readdb" => readdb::main,
        "readhostdb" => readhostdb::main,
        "readlinkdb" => readlinkdb::main,
        "readseg" => readseg::main,
        "repartition" => repartition::main,
        "report" => report::main,
        "search" => search::main,
        "sitemap" => sitemap::main,
        "updatedb" => updatedb::main,
        "warc" => warc::main,
        _ => return None,
    })
}

fn usage() -> String {
    let width = COMMANDS.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut s = format!(
        "trawl {} - a batch web crawler\n\nUsage: trawl <COMMAND> [ARGS]...\n       trawl help <COMMAND>\n       trawl --install-links [DIR]\n\nCommands:\n",
        env!("CARGO_PKG_VERSION")
    );
    for c in COMMANDS {
        s.push_str(&format!("  {:<width$}  {}\n", c.name, c.about));
    }
    s.push_str(
        "\nEvery command takes --crawl-dir, --config, --set KEY=VALUE (repeatable), --help and \
--version.\nEach command also runs under its own name: `fetch ARGS` is `trawl fetch ARGS` when \
`fetch` is a link to trawl\n(`trawl --install-links [DIR]` makes them in DIR, by default beside \
trawl; `make build` does).\n",
    );
    s
}

/// Levenshtein distance (command names are short).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn unknown(command: &str) -> ExitCode {
    let close = COMMANDS
        .iter()
        .map(|c| (distance(command, c.name), c.name))
        .min()
        .filter(|(d, _)| *d <= 2)
        .map(|(_, n)| n);
    let hint = close.map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
    eprintln!("trawl: unknown command `{command}`{hint}; `trawl --help` lists the commands");
    ExitCode::from(exit::USAGE)
}

/// `trawl --install-links [DIR]`: a link named after every command to this
/// executable, in DIR (default: the executable's directory).
fn install_links(dir: Option<&OsString>) -> ExitCode {
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("trawl: cannot locate the trawl executable: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    let dir = dir
        .map(PathBuf::from)
        .or_else(|| me.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    match trawl::cli::install_links(&me, &dir) {
        Ok(n) => {
            eprintln!(
                "trawl: {n} command links to {} in {}",
                me.display(),
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::from(exit::ERROR)
        }
    }
}

/// Runs the command `name` with `args` (its name first).
fn run(name: &str, args: Vec<OsString>) -> ExitCode {
    let Some(main) = entry(name) else {
        return unknown(name);
    };
    trawl::cli::set_command(name);
    main(args)
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    // Run under a command's name (a link): that command.
    let called = args
        .first()
        .map(Path::new)
        .and_then(Path::file_stem)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if called != "trawl" && entry(&called).is_some() {
        args[0] = OsString::from(&called);
        return run(&called, args);
    }
    args.remove(0);
    let Some(first) = args.first().map(|a| a.to_string_lossy().into_owned()) else {
        eprint!("{}", usage());
        return ExitCode::from(exit::USAGE);
    };
    match first.as_str() {
        "-h" | "--help" => {
            print!("{}", usage());
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            println!("trawl {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "--install-links" => install_links(args.get(1)),
        "help" => match args.get(1).map(|a| a.to_string_lossy().into_owned()) {
            None => {
                print!("{}", usage());
                ExitCode::SUCCESS
            }
            Some(c) => run(&c, vec![OsString::from(&c), OsString::from("--help")]),
        },
        c => {
            let c = c.to_string();
            run(&c, args)
        }
    }
}
