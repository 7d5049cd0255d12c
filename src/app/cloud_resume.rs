//! A ReteCloud session's resume points between runs of reterm, in
//! `~/.rete/resume/<session id>.json` (`[{"stream":…,"after":…}]`, 0600,
//! replaced atomically): a restarted reterm replays exactly the rows it
//! missed, not only each channel's newest. The engine reads the file when
//! the session first connects and writes it as rows arrive (at most every
//! few seconds), at each attach and when a connection or reterm ends.
//! Nothing secret is in it: stream ids and row numbers.

use rete_cloud_protocol::frame::ResumePoint;
use rete_transports::{CloudResumeStore, ResumeStoreError};
use std::path::{Path, PathBuf};

/// One session's resume points in their file.
pub struct ResumeFile {
    /// The file.
    pub path: PathBuf,
}

impl ResumeFile {
    /// The file of session `session` under `home`.
    pub fn of(home: &Path, session: &str) -> Self {
        ResumeFile {
            path: home
                .join(".rete")
                .join("resume")
                .join(format!("{session}.json")),
        }
    }
}

fn error(what: &str, path: &Path, e: impl std::fmt::Display) -> ResumeStoreError {
    ResumeStoreError(format!("{what} {}: {e}", path.display()))
}

impl CloudResumeStore for ResumeFile {
    fn load(&self) -> Result<Vec<ResumePoint>, ResumeStoreError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| error("reading", &self.path, e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(error("reading", &self.path, e)),
        }
    }

    fn store(&self, points: &[ResumePoint]) -> Result<(), ResumeStoreError> {
        if let Some(dir) = self.path.parent() {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| error("making", dir, e))?;
        }
        let json = serde_json::to_vec(points).map_err(|e| error("writing", &self.path, e))?;
        reterm::secrets::private_file::replace(
            &self.path,
            &json,
            reterm::secrets::private_file::FileMode::Exactly(0o600),
        )
        .map_err(|e| error("writing", &self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rete_cloud_protocol::frame::StreamId;

    #[test]
    fn points_stored_are_read_back_and_a_missing_file_is_none() {
        let home = tempfile::tempdir().expect("tempdir");
        let file = ResumeFile::of(home.path(), "0f8e2b1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b");
        assert_eq!(file.load(), Ok(Vec::new()));
        let points = vec![ResumePoint {
            stream: StreamId("libera.1".into()),
            after: 120,
        }];
        file.store(&points).expect("stored");
        assert_eq!(file.load(), Ok(points));
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file.path)
            .expect("file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it() {
        let home = tempfile::tempdir().expect("tempdir");
        let file = ResumeFile::of(home.path(), "s");
        std::fs::create_dir_all(file.path.parent().expect("dir")).expect("dir");
        std::fs::write(&file.path, b"{not json").expect("write");
        let e = file.load().expect_err("damaged");
        assert!(e.0.contains("s.json"), "{e}");
    }
}
