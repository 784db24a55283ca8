//! `trawl`: one command for every stage and tool (`trawl fetch ..` runs the `fetch`
//! binary beside it with the same arguments, as `git` runs `git-*`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use trawl::cli::{COMMANDS, exit};

fn usage() -> String {
    let width = COMMANDS.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut s = format!(
        "trawl {} - a batch web crawler\n\nUsage: trawl <COMMAND> [ARGS]...\n       trawl help <COMMAND>\n\nCommands:\n",
        env!("CARGO_PKG_VERSION")
    );
    for (name, about) in COMMANDS {
        s.push_str(&format!("  {name:<width$}  {about}\n"));
    }
    s.push_str(
        "\nEvery command takes --crawl-dir, --config, --set KEY=VALUE (repeatable), --help and \
--version.\nEach command is also a binary of its own: `trawl fetch ARGS` is `fetch ARGS`.\n",
    );
    s
}

/// The binary of `command`: beside this executable.
fn binary(command: &str) -> Result<PathBuf, String> {
    let me =
        std::env::current_exe().map_err(|e| format!("cannot locate the trawl executable: {e}"))?;
    let dir = me
        .parent()
        .ok_or_else(|| format!("{}: no parent directory", me.display()))?;
    let path = dir.join(format!("{command}{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        return Err(format!(
            "{} is missing: the stage binaries are installed together (cargo build --release --bins, or cargo install --path .)",
            path.display()
        ));
    }
    Ok(path)
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
        .map(|(n, _)| (distance(command, n), *n))
        .min()
        .filter(|(d, _)| *d <= 2)
        .map(|(_, n)| n);
    let hint = close.map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
    eprintln!("trawl: unknown command `{command}`{hint}; `trawl --help` lists the commands");
    ExitCode::from(exit::USAGE)
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(first) = args.first().map(|a| a.to_string_lossy().into_owned()) else {
        eprint!("{}", usage());
        return ExitCode::from(exit::USAGE);
    };
    let command = match first.as_str() {
        "-h" | "--help" => {
            print!("{}", usage());
            return ExitCode::SUCCESS;
        }
        "-V" | "--version" => {
            println!("trawl {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        "help" => match args.get(1).map(|a| a.to_string_lossy().into_owned()) {
            None => {
                print!("{}", usage());
                return ExitCode::SUCCESS;
            }
            Some(c) => {
                args = vec![OsString::from(&c), OsString::from("--help")];
                c
            }
        },
        c => c.to_string(),
    };
    if !COMMANDS.iter().any(|(n, _)| *n == command) {
        return unknown(&command);
    }
    let path = match binary(&command) {
        Ok(p) => p,
        Err(m) => {
            eprintln!("trawl: {m}");
            return ExitCode::from(exit::ERROR);
        }
    };
    let mut cmd = std::process::Command::new(&path);
    cmd.args(&args[1..]);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Replaces this process: signals, stdin/stdout and the exit code are the stage's.
        let e = cmd.exec();
        eprintln!("trawl: cannot run {}: {e}", path.display());
        ExitCode::from(exit::ERROR)
    }
    #[cfg(not(unix))]
    {
        match cmd.status() {
            Ok(s) => ExitCode::from(s.code().unwrap_or(1) as u8),
            Err(e) => {
                eprintln!("trawl: cannot run {}: {e}", path.display());
                ExitCode::from(exit::ERROR)
            }
        }
    }
}
