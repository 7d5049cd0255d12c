//! Per-buffer transcripts: with `logging = true`, every row printed for a
//! buffer is also appended, as the same line, to
//! `~/.rete/logs/<network>/<buffer>.log`.
//!
//! Each transcript's first line in a run says `log opened` with the date,
//! and a `day changed` line precedes a row on a later day
//! (`transcript_dates.rs`); both are shaped as rows and printed in line mode.
//!
//! Only rows (and those date lines) reach this module. reterm's own output (`/help`, `/buffers`,
//! `/control …` answers, errors, state lines) is printed by other paths and
//! never passed here, so a control token cannot end up in a transcript; the
//! rows themselves are masked by the engine (`/smsg` text is `********`).
//!
//! # File names
//! The network's configured name and the buffer's name each become one path
//! component by [`file_name`]: ASCII letters and digits, non-ASCII letters and
//! digits, the backquote and `# & + ! - _ . , @ [ ] { } ^ | ~ =` are kept; every other
//! character (`/`, `\`, `%`, `:`, spaces, control characters, …) is written
//! as `%XX` per UTF-8 byte, and a leading `.` as `%2E`. The rule is
//! reversible, so two buffers never share a file, and no result is empty,
//! `.`, `..` or contains `/`, so no name can leave the logs directory. The
//! server buffer is `(server).log`: `(` is always encoded in other names, so
//! no channel or query (a nick may be `server`) can collide with it.
//!
//! # Writing
//! Files are written on one blocking task so a slow disk never stalls the
//! event loop; the queue to it is bounded, so a disk that cannot keep up
//! slows the loop rather than growing memory. Directories are created 0700
//! and files 0600, opened for appending, each line written with one `write`
//! (no user-space buffer, so the line is in the file as soon as it is
//! written). At most [`MAX_OPEN`] files stay open; the least recently used is
//! closed beyond that. A failure is reported once per file as an `error: …`
//! line, and that buffer's transcript stops for the rest of the run.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Open transcript files kept at most; a client in many channels must not
/// run out of file descriptors.
pub const MAX_OPEN: usize = 64;

/// Lines queued for the writer before appending waits for it.
const QUEUE: usize = 1024;

/// File stem of a network's server buffer.
const SERVER_STEM: &str = "(server)";

/// Which buffer of a network a line belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// The network's server buffer.
    Server,
    /// A channel or query buffer, by its name.
    Named(String),
}

/// `$HOME/.rete/logs`, the directory every transcript lives under.
pub fn logs_dir(home: &Path) -> PathBuf {
    home.join(".rete").join("logs")
}

/// The transcript of `target` on `network` under `root`; see the module
/// docs for the naming rule.
pub fn transcript_path(root: &Path, network: &str, target: &Target) -> PathBuf {
    let stem = match target {
        Target::Server => SERVER_STEM.to_owned(),
        Target::Named(name) => file_name(name),
    };
    root.join(file_name(network)).join(format!("{stem}.log"))
}

/// One path component for `name`: safe characters kept, others `%XX`.
pub fn file_name(name: &str) -> String {
    if name.is_empty() {
        // `%` alone is never produced otherwise (it is always followed by
        // two hex digits), so this stays reversible.
        return "%".to_owned();
    }
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.char_indices() {
        let keep = is_safe(c) && !(i == 0 && c == '.');
        if keep {
            out.push(c);
        } else {
            let mut bytes = [0u8; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// Characters kept as they are in a file name.
fn is_safe(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || "#&+!-_.,@[]{}^`|~=".contains(c)
    } else {
        c.is_alphanumeric()
    }
}

/// One line for one transcript.
struct Entry {
    path: PathBuf,
    line: String,
}

/// The running transcript writer.
pub struct Transcripts {
    root: PathBuf,
    tx: mpsc::Sender<Entry>,
    task: JoinHandle<()>,
}

impl Transcripts {
    /// Starts writing under `root`; `report` gets each `error: …` line (on
    /// the writer's thread).
    pub fn start(root: PathBuf, report: impl Fn(&str) + Send + 'static) -> Transcripts {
        let (tx, mut rx) = mpsc::channel::<Entry>(QUEUE);
        let task = tokio::task::spawn_blocking(move || {
            let mut files = OpenFiles::new(MAX_OPEN, report);
            while let Some(entry) = rx.blocking_recv() {
                files.append(&entry.path, &entry.line);
            }
        });
        Transcripts { root, tx, task }
    }

    /// Queues `line` for `target`'s transcript on `network`. Waits only when
    /// the queue is full.
    pub async fn append(&self, network: &str, target: &Target, line: String) {
        let path = transcript_path(&self.root, network, target);
        // A send fails only if the writer is gone, which ends logging anyway.
        let _ = self.tx.send(Entry { path, line }).await;
    }

    /// Writes what is queued and closes every file.
    pub async fn close(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

/// An open file and when it was last written.
struct OpenFile {
    file: File,
    used: u64,
}

/// The files currently open, bounded, and those whose logging stopped.
struct OpenFiles<R> {
    limit: usize,
    open: HashMap<PathBuf, OpenFile>,
    /// Write counter: orders files by last use.
    tick: u64,
    failed: HashSet<PathBuf>,
    report: R,
}

impl<R: Fn(&str)> OpenFiles<R> {
    fn new(limit: usize, report: R) -> Self {
        OpenFiles {
            limit: limit.max(1),
            open: HashMap::new(),
            tick: 0,
            failed: HashSet::new(),
            report,
        }
    }

    /// Appends `line` to `path` unless its logging stopped; a failure stops
    /// it and is reported once.
    fn append(&mut self, path: &Path, line: &str) {
        if self.failed.contains(path) {
            return;
        }
        if let Err(e) = self.try_append(path, line) {
            self.open.remove(path);
            self.failed.insert(path.to_owned());
            (self.report)(&format!(
                "error: transcript {} stopped: {e}",
                path.display()
            ));
        }
    }

    fn try_append(&mut self, path: &Path, line: &str) -> io::Result<()> {
        self.tick += 1;
        let tick = self.tick;
        if !self.open.contains_key(path) {
            let file = open_append(path)?;
            self.make_room();
            self.open
                .insert(path.to_owned(), OpenFile { file, used: tick });
        }
        let Some(open) = self.open.get_mut(path) else {
            return Err(io::Error::other("transcript file vanished from the table"));
        };
        open.used = tick;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        open.file.write_all(&bytes)
    }

    /// Closes least recently used files until one more fits.
    fn make_room(&mut self) {
        while self.open.len() >= self.limit {
            let oldest = self
                .open
                .iter()
                .min_by_key(|(_, f)| f.used)
                .map(|(p, _)| p.clone());
            match oldest {
                Some(p) => {
                    self.open.remove(&p);
                }
                None => break,
            }
        }
    }
}

/// Opens `path` for appending (0600 when created), creating its directories
/// (0700).
fn open_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::fs;
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::Component;
    use std::rc::Rc;

    #[test]
    fn safe_names_are_kept() {
        assert_eq!(file_name("#rete"), "#rete");
        assert_eq!(file_name("&local-chan_1"), "&local-chan_1");
        assert_eq!(file_name("[bot]^"), "[bot]^");
        assert_eq!(file_name("#café"), "#café");
        assert_eq!(file_name("a.b"), "a.b");
    }

    #[test]
    fn path_characters_are_encoded() {
        assert_eq!(file_name("/"), "%2F");
        assert_eq!(file_name("../x"), "%2E.%2Fx");
        assert_eq!(file_name(".."), "%2E.");
        assert_eq!(file_name("."), "%2E");
        assert_eq!(file_name("#a\\b"), "#a%5Cb");
        assert_eq!(file_name("50%"), "50%25");
        assert_eq!(file_name("a b\u{7}"), "a%20b%07");
        assert_eq!(file_name("(server)"), "%28server%29");
        assert_eq!(file_name(""), "%");
    }

    #[test]
    fn every_name_stays_one_component_inside_the_root() {
        let root = Path::new("/logs");
        for name in ["..", ".", "/", "../../etc/passwd", "a/../..", "", "\0", "~"] {
            for target in [Target::Server, Target::Named(name.to_owned())] {
                let path = transcript_path(root, name, &target);
                let rest = path.strip_prefix(root).unwrap();
                let parts: Vec<_> = rest.components().collect();
                assert_eq!(parts.len(), 2, "{name:?} -> {path:?}");
                assert!(
                    parts.iter().all(|c| matches!(c, Component::Normal(_))),
                    "{name:?} -> {path:?}"
                );
            }
        }
    }

    #[test]
    fn server_buffer_has_its_own_file() {
        let root = Path::new("/logs");
        assert_eq!(
            transcript_path(root, "net", &Target::Server),
            Path::new("/logs/net/(server).log")
        );
        assert_ne!(
            transcript_path(root, "net", &Target::Server),
            transcript_path(root, "net", &Target::Named("(server)".into()))
        );
    }

    fn collecting() -> (Rc<RefCell<Vec<String>>>, impl Fn(&str)) {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let sink = seen.clone();
        (seen, move |l: &str| sink.borrow_mut().push(l.to_owned()))
    }

    #[test]
    fn appends_lines_with_private_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = transcript_path(tmp.path(), "net", &Target::Named("#rete".into()));
        let (errors, report) = collecting();
        let mut files = OpenFiles::new(4, report);
        files.append(&path, "one");
        files.append(&path, "two");
        assert_eq!(fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        let file_mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let dir_mode = fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!((file_mode, dir_mode), (0o600, 0o700));
        assert!(errors.borrow().is_empty());
    }

    #[test]
    fn reopening_appends_instead_of_truncating() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("n").join("a.log");
        OpenFiles::new(4, |_: &str| {}).append(&path, "first run");
        OpenFiles::new(4, |_: &str| {}).append(&path, "second run");
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "first run\nsecond run\n"
        );
    }

    #[test]
    fn least_recently_used_file_is_closed_beyond_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let p = |n: &str| tmp.path().join("net").join(format!("{n}.log"));
        let mut files = OpenFiles::new(2, |_: &str| {});
        files.append(&p("a"), "1");
        files.append(&p("b"), "1");
        files.append(&p("a"), "2");
        files.append(&p("c"), "1");
        assert_eq!(files.open.len(), 2);
        assert!(files.open.contains_key(&p("a")));
        assert!(files.open.contains_key(&p("c")));
        // A closed file is reopened and appended to.
        files.append(&p("b"), "2");
        assert_eq!(fs::read_to_string(p("b")).unwrap(), "1\n2\n");
        assert_eq!(files.open.len(), 2);
    }

    #[test]
    fn a_failure_is_reported_once_and_stops_that_buffer_only() {
        let tmp = tempfile::tempdir().unwrap();
        // A plain file where the network directory should be.
        fs::write(tmp.path().join("blocked"), "").unwrap();
        let bad = tmp.path().join("blocked").join("#a.log");
        let good = tmp.path().join("ok").join("#a.log");
        let (errors, report) = collecting();
        let mut files = OpenFiles::new(4, report);
        files.append(&bad, "x");
        files.append(&bad, "y");
        files.append(&good, "z");
        let errors = errors.borrow();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("error: transcript "), "{errors:?}");
        assert_eq!(fs::read_to_string(&good).unwrap(), "z\n");
    }

    #[tokio::test]
    async fn the_writer_task_writes_everything_before_close_returns() {
        let tmp = tempfile::tempdir().unwrap();
        let transcripts = Transcripts::start(tmp.path().to_owned(), |_| {});
        let chan = Target::Named("#rete".into());
        for i in 0..100 {
            transcripts.append("net", &chan, format!("line {i}")).await;
        }
        transcripts
            .append("net", &Target::Server, "hello".into())
            .await;
        transcripts.close().await;
        let text = fs::read_to_string(transcript_path(tmp.path(), "net", &chan)).unwrap();
        let expected: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected);
        let server = fs::read_to_string(tmp.path().join("net").join("(server).log")).unwrap();
        assert_eq!(server, "hello\n");
    }
}
