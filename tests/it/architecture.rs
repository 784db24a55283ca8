//! docs/architecture.md stays in step with the code: its module table lists exactly
//! the library's modules and their submodules, and every `crate::x` path a module uses
//! is allowed by the import rules table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn doc() -> String {
    fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md")
}

/// The rows of the first table under `## {title}`: the cells of each row.
fn table(doc: &str, title: &str) -> Vec<Vec<String>> {
    let start = doc
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("docs/architecture.md has no section `## {title}`"));
    let rest = &doc[start + title.len() + 5..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its |---| line
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// Names in a cell: `a`, `b::c`, ... (backquoted), or nothing for `-`.
fn names(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Is this file a test-only module (`tests.rs`, `x/tests/...`)?
fn test_only(rel: &Path) -> bool {
    rel.components()
        .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs")
}

/// Every module of the library under src/, as (top-level module, submodule path) with
/// the submodule path empty for the top-level module itself.
fn modules() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rs_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        if rel == Path::new("lib.rs") || test_only(&rel) {
            continue;
        }
        let mut parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        let top = parts.remove(0);
        let subs = out.entry(top).or_default();
        if !parts.is_empty() {
            subs.insert(parts.join("::"));
        }
    }
    out
}

fn rs_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(rs_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn module_table_matches_the_tree() {
    let doc = doc();
    let rows = table(&doc, "Modules");
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in &rows {
        assert!(
            row.len() >= 3,
            "docs/architecture.md, ## Modules: a row needs 3 cells (module | submodules | job): {row:?}"
        );
        let module = names(&row[0]);
        assert_eq!(module.len(), 1, "one module per row: {row:?}");
        assert!(!row[2].is_empty(), "the job of {row:?} is empty");
        documented.insert(module.into_iter().next().unwrap(), names(&row[1]));
    }
    let actual = modules();
    let missing: Vec<_> = actual
        .keys()
        .filter(|m| !documented.contains_key(*m))
        .collect();
    let gone: Vec<_> = documented
        .keys()
        .filter(|m| !actual.contains_key(*m))
        .collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "docs/architecture.md, ## Modules: modules in src/ but not in the table: {missing:?}; \
         in the table but not in src/: {gone:?}"
    );
    for (module, subs) in &actual {
        assert_eq!(
            &documented[module], subs,
            "docs/architecture.md, ## Modules: the submodules of `{module}` (left: the table, right: src/{module}/)"
        );
    }
}

/// `crate::x` paths in code (not in comments) of a file.
fn crate_imports(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + 7..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
            rest = after;
        }
        // `use crate::{a, b::c}`
        if let Some(i) = code.find("crate::{") {
            let group = &code[i + 8..];
            for item in group.split([',', '}']) {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// Every file of src/ with its top-level module and the other top-level modules its
/// code uses, from the `crate::x` paths (unit tests at the end of a file may use
/// anything, and crate-root re-exports such as `crate::Result` are not modules).
fn file_imports() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    let src = root().join("src");
    let tops: BTreeSet<String> = modules().into_keys().collect();
    let mut out = Vec::new();
    for file in rs_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || test_only(&rel) {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let used = crate_imports(code)
            .into_iter()
            .filter(|u| *u != top && tops.contains(u))
            .collect();
        out.push((rel, top, used));
    }
    out
}

/// The top-level modules each top-level module of src/ uses ([`file_imports`]).
fn code_imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, top, used) in file_imports() {
        out.entry(top).or_default().extend(used);
    }
    out
}

/// The import graph of the library's top-level modules has no cycle: the layers of
/// `## Import rules` hold in the code, not only in the table.
#[test]
fn the_module_graph_is_acyclic() {
    let graph = code_imports();
    // Depth-first search; a back edge closes a cycle, reported with its path.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                0 => visit(next, graph, state, path, cycles),
                1 => {
                    let start = path.iter().position(|p| p == next).unwrap();
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    cycles.push(cycle.join(" -> "));
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for m in graph.keys() {
        if state.get(m.as_str()).copied().unwrap_or(0) == 0 {
            visit(m, &graph, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(
        cycles.is_empty(),
        "module import cycles in src/ (move what both sides need below them):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn imports_follow_the_rules() {
    let doc = doc();
    let rules: BTreeMap<String, BTreeSet<String>> = table(&doc, "Import rules")
        .into_iter()
        .map(|row| {
            let module = names(&row[0]).into_iter().next().unwrap_or_default();
            (module, names(&row[1]))
        })
        .collect();
    let tops: BTreeSet<String> = modules().into_keys().collect();
    let undocumented: Vec<_> = tops.iter().filter(|m| !rules.contains_key(*m)).collect();
    assert!(
        undocumented.is_empty(),
        "docs/architecture.md, ## Import rules: no row for {undocumented:?}"
    );
    let mut broken = Vec::new();
    for (rel, top, used) in file_imports() {
        for u in used {
            if !rules[&top].contains(&u) {
                broken.push(format!("src/{}: {top} uses {u}", rel.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports not allowed by docs/architecture.md, ## Import rules (change the code, or the rule with a reason):\n{}",
        broken.join("\n")
    );
}

/// The test web is its own crate: the library does not depend on it.
#[test]
fn the_library_does_not_use_the_test_web() {
    let src = root().join("src");
    let users: Vec<_> = rs_files(&src)
        .into_iter()
        .filter(|f| {
            fs::read_to_string(f)
                .unwrap()
                .lines()
                .any(|l| !l.trim_start().starts_with("//") && l.contains("testweb::"))
        })
        .collect();
    assert!(users.is_empty(), "library files using testweb: {users:?}");
}

/// Dataset and file names of the crawl directory are spelled only in `store`: every
/// other module asks `store::layout` for the path (unit tests may spell them).
#[test]
fn crawl_directory_names_are_spelled_only_in_store() {
    const NAMES: [&str; 14] = [
        "\"crawl_generate\"",
        "\"crawl_fetch\"",
        "\"parse_text\"",
        "\"parse_data\"",
        "\"crawl_parse\"",
        "\"sitemapdb\"",
        "\"segments\"",
        "\"_meta.json\"",
        "\"_SUCCESS\"",
        "\"fetch.last_end\"",
        "\"robots_cache.json\"",
        "\".lock\"",
        "\"current\"",
        "\"old\"",
    ];
    let src = root().join("src");
    let mut found = Vec::new();
    for file in rs_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("store") || test_only(rel) {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in NAMES {
                if code.contains(name) {
                    found.push(format!("src/{}:{}: {name}", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "crawl-directory names spelled outside src/store (use store::names / store::layout):\n{}",
        found.join("\n")
    );
}

/// A row's partition is computed by `store::partition::Partitioner` only (by host or
/// by registrable domain, from the crawl's `_meta.json`): no other code hashes a
/// host into a partition, and the old free function is gone.
#[test]
fn partitions_are_computed_only_by_the_partitioner() {
    let owner = Path::new("store/partition.rs");
    let mut found = Vec::new();
    for top in ["src", "stages", "tests", "bench/src"] {
        let base = root().join(top);
        for file in rs_files(&base) {
            let rel = file.strip_prefix(&base).unwrap();
            if (top == "src" && rel == owner)
                || (top == "tests" && rel == Path::new("it/architecture.rs"))
            {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let hashes_into_parts = code.contains("from_le_bytes") && code.contains('%');
                let hashes_a_host = code.contains("blake3::hash(") && code.contains("host");
                if code.contains("partition_for_host") || hashes_into_parts || hashes_a_host {
                    found.push(format!(
                        "{top}/{}:{}: {}",
                        rel.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "partitions computed outside store::partition::Partitioner (use the crawl's Partitioner: CrawlDbMeta::partitioner, SegmentMeta::partitioner):\n{}",
        found.join("\n")
    );
}

/// The block of `file` between `<!-- generated from the registry ... -->` (the line
/// after `marker`) and `<!-- end of the generated table -->` is `generated`;
/// with `UPDATE_DOCS=1` (`make docs`) the block is rewritten instead.
fn generated_block(file: &str, marker: &str, generated: &str) {
    let path = root().join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let start = text
        .find(marker)
        .and_then(|i| text[i..].find('\n').map(|j| i + j + 1))
        .unwrap_or_else(|| panic!("{file}: no line starting the generated table ({marker:?})"));
    let end_marker = "<!-- end of the generated table -->";
    let end = text[start..]
        .find(end_marker)
        .map(|j| start + j)
        .unwrap_or_else(|| panic!("{file}: no {end_marker:?} after {marker:?}"));
    if &text[start..end] == generated {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{generated}{}", &text[..start], &text[end..]);
        fs::write(&path, updated).unwrap_or_else(|e| panic!("{file}: {e}"));
        return;
    }
    panic!(
        "{file}: the table generated from the registry differs from the file's copy; run `make docs` to rewrite it.\nGenerated:\n{generated}"
    );
}

/// The README's table of commands is the registry's (`cli::COMMANDS`, from which
/// the dispatch, `trawl --help` and the links derive): a command added to the
/// registry is documented, and the table names no command that is gone.
#[test]
fn docs_the_readme_table_of_commands_is_generated_from_the_registry() {
    generated_block(
        "README.md",
        "<!-- generated from the registry (cli::COMMANDS)",
        &trawl::cli::commands_table(),
    );
}

/// docs/architecture.md's table of locks is the registry's declarations, which the
/// executor enforces (`StageCtx::hold`).
#[test]
fn docs_the_table_of_locks_is_generated_from_the_registry() {
    generated_block(
        "docs/architecture.md",
        "<!-- generated from the registry (cli::COMMANDS, `locks`)",
        &trawl::cli::locks_table(),
    );
}
