//! One writer per site: an exclusive, non-blocking lock on a file in the ledger folder. The
//! kernel drops it when the process dies, so a `kill -9` never leaves a stale lock; the file
//! keeps who took it last, for the message a second gatefix prints.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub struct SiteLock {
    file: File,
    path: PathBuf,
}

impl SiteLock {
    /// Takes the lock or fails at once, naming the holder.
    pub fn acquire(ledger_dir: &Path, command: &str) -> Result<SiteLock> {
        std::fs::create_dir_all(ledger_dir).map_err(|source| Error::Io {
            path: ledger_dir.to_path_buf(),
            source,
        })?;
        let path = ledger_dir.join("gatefix.lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(Error::Refused {
                    message: format!(
                        "the site is locked by another gatefix ({}); try again when it has finished",
                        holder.trim().replace('\n', ", ")
                    ),
                });
            }
            Err(TryLockError::Error(source)) => return Err(Error::Io { path, source }),
        }
        remove_stale_git_locks(ledger_dir);
        let holder = format!("pid {}\n{command}\n", std::process::id());
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = file.write_all(holder.as_bytes());
        let _ = file.sync_all();
        Ok(SiteLock { file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// git's own `*.lock` files that a process killed inside a ref update leaves behind. Only a
/// gatefix holding the site lock writes the ledger, so once we hold it they are stale; left in
/// place, they would block every later transaction.
fn remove_stale_git_locks(ledger_dir: &Path) {
    for name in [
        "HEAD.lock",
        "packed-refs.lock",
        "refs/heads/main.lock",
        "refs/gatefix/pending.lock",
    ] {
        let _ = std::fs::remove_file(ledger_dir.join(name));
    }
}

impl Drop for SiteLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
