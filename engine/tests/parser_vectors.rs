//! Runs the ircdocs parser-test vectors (PyPI package `irc-parser-tests`)
//! against `Line::parse` and `OutLine::to_wire`.
//!
//! The vectors are read as data from the installed package, never copied into
//! this repository. The directory is `RETE_PARSER_TESTS_DIR` when set, else the
//! package's `data` directory as reported by `python3`. Without either the
//! test fails: a parser test suite that silently skips proves nothing.
// Test and bench helpers fail loudly: an unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rete_engine::line::{Line, OutLine};
use serde::Deserialize;

const HOW_TO_INSTALL: &str = "the ircdocs parser-test vectors were not found. Install them with \
`python3 -m pip install irc-parser-tests` (or into a venv: `python3 -m venv /tmp/ptv && \
/tmp/ptv/bin/pip install irc-parser-tests` and put /tmp/ptv/bin first on PATH), or set \
RETE_PARSER_TESTS_DIR to the directory holding msg-split.yaml";

/// Asks python where the `parser_tests` package lives without importing it
/// (importing would also need PyYAML).
const FIND_PACKAGE: &str = "import importlib.util as u, os, sys
s = u.find_spec('parser_tests')
if s is None: sys.exit('module parser_tests is not installed for this python3')
print(os.path.join(s.submodule_search_locations[0], 'data'))";

fn vectors_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RETE_PARSER_TESTS_DIR") {
        return PathBuf::from(dir);
    }
    let output = Command::new("python3").args(["-c", FIND_PACKAGE]).output();
    match output {
        Ok(out) if out.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            assert!(dir.join("msg-split.yaml").is_file(), "{HOW_TO_INSTALL}");
            dir
        }
        Ok(out) => panic!(
            "{HOW_TO_INSTALL}\n(python3 said: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("{HOW_TO_INSTALL}\n(could not run python3: {e})"),
    }
}

fn load<T: for<'de> Deserialize<'de>>(dir: &Path, name: &str) -> T {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{HOW_TO_INSTALL}\n(reading {}: {e})", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[derive(Deserialize)]
struct File<T> {
    tests: Vec<T>,
}

/// The parts of a message as the vectors describe them; absent keys are empty.
#[derive(Deserialize, Debug, PartialEq)]
struct Atoms {
    #[serde(default)]
    tags: Option<BTreeMap<String, String>>,
    #[serde(default)]
    source: Option<String>,
    verb: String,
    #[serde(default)]
    params: Vec<String>,
}

#[derive(Deserialize)]
struct SplitVector {
    input: String,
    atoms: Atoms,
}

#[derive(Deserialize)]
struct JoinVector {
    desc: Option<String>,
    atoms: Atoms,
    matches: Vec<String>,
}

#[derive(Deserialize)]
struct UserhostVector {
    source: String,
    atoms: BTreeMap<String, String>,
}

/// What a parsed line says, in the vectors' shape. Tags go through a map so
/// a later duplicate overrides an earlier one, as the spec asks.
fn atoms_of(line: &Line<'_>) -> Atoms {
    let tags: BTreeMap<String, String> = line
        .tags()
        .map(|t| (t.key.to_owned(), t.value.into_owned()))
        .collect();
    Atoms {
        tags: line.has_tags().then_some(tags),
        source: line.source().map(str::to_owned),
        verb: line.command().to_owned(),
        params: line.params().iter().map(|p| (*p).to_owned()).collect(),
    }
}

fn out_line_of(atoms: &Atoms) -> OutLine {
    let mut line = OutLine::new(atoms.verb.clone());
    for (k, v) in atoms.tags.iter().flatten() {
        line = line.tag(k.clone(), Some(v.clone()));
    }
    line.source = atoms.source.clone();
    line.params = atoms.params.clone();
    line
}

#[test]
fn ircdocs_vectors() {
    let dir = vectors_dir();

    let split: File<SplitVector> = load(&dir, "msg-split.yaml");
    for v in &split.tests {
        let line = Line::parse(&v.input)
            .unwrap_or_else(|e| panic!("msg-split {:?}: parse error {e}", v.input));
        assert_eq!(atoms_of(&line), v.atoms, "msg-split {:?}", v.input);
        for (key, value) in v.atoms.tags.iter().flatten() {
            assert_eq!(
                line.tag(key).as_deref(),
                Some(value.as_str()),
                "tag {key} of {:?}",
                v.input
            );
        }
    }

    let join: File<JoinVector> = load(&dir, "msg-join.yaml");
    for v in &join.tests {
        let what = v.desc.as_deref().unwrap_or("?");
        let wire = out_line_of(&v.atoms)
            .to_wire()
            .unwrap_or_else(|e| panic!("msg-join {what}: serialize error {e}"));
        assert!(
            v.matches.contains(&wire),
            "msg-join {what}: {wire:?} not in {:?}",
            v.matches
        );
        let back = Line::parse(&wire).unwrap_or_else(|e| panic!("msg-join {what}: reparse {e}"));
        assert_eq!(atoms_of(&back), v.atoms, "msg-join {what}: round trip");
    }

    // Only the nick part maps onto this API (`source_nick`).
    let userhost: File<UserhostVector> = load(&dir, "userhost-split.yaml");
    for v in &userhost.tests {
        let input = format!(":{} PING", v.source);
        let line = Line::parse(&input).unwrap_or_else(|e| panic!("userhost {input:?}: {e}"));
        let nick = v.atoms.get("nick").map_or("", String::as_str);
        assert_eq!(line.source_nick(), Some(nick), "userhost {:?}", v.source);
    }

    println!(
        "ran {} msg-split, {} msg-join and {} userhost-split vectors",
        split.tests.len(),
        join.tests.len(),
        userhost.tests.len()
    );
    // Guards against an emptied or renamed data file passing vacuously.
    assert!(split.tests.len() >= 30 && join.tests.len() >= 15 && userhost.tests.len() >= 5);
}
