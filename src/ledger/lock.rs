//! One writer per site: exclusive, non-blocking locks on a file beside the site's default
//! ledger and one in the ledger folder. The kernel drops them when the process dies, so a
//! `kill -9` never leaves a stale lock; each file keeps who took it last, for the message a
//! second gatefix prints.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Two locks, taken in this order: the site's (in the folder that holds the site's default
/// ledger and its pointer, `place::site_lock_path`) and the ledger's. The site lock makes
/// two gatefix runs on one site wait for each other even when they name two ledgers (each
/// would otherwise record its own ledger as the site's, and one transaction could hide);
/// the ledger lock keeps one ledger to one writer when two sites share it.
pub struct SiteLock {
    site: Held,
    ledger: Held,
}

/// One lock file, held.
struct Held {
    file: File,
    path: PathBuf,
}

impl SiteLock {
    /// Takes both locks or fails at once, naming the holder.
    pub fn acquire(site_root: &Path, ledger_dir: &Path, command: &str) -> Result<SiteLock> {
        let site = Held::take(&super::place::site_lock_path(site_root), command)?;
        let ledger = Held::take(&ledger_dir.join("gatefix.lock"), command)?;
        remove_stale_git_locks(ledger_dir);
        Ok(SiteLock { site, ledger })
    }

    pub fn path(&self) -> &Path {
        &self.ledger.path
    }
}

impl Held {
    fn take(path: &Path, command: &str) -> Result<Held> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|source| Error::Io {
                path: folder.to_path_buf(),
                source,
            })?;
        }
        // A holder that finishes removes its lock file (see `Drop`): a lock taken on a file
        // that is no longer at the path locks nothing, so take it again on the new one.
        for _ in 0..100 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(io)?;
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
                Err(TryLockError::Error(source)) => return Err(io(source)),
            }
            let same = match (file.metadata(), std::fs::metadata(path)) {
                (Ok(held), Ok(there)) => held.ino() == there.ino() && held.dev() == there.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            let holder = format!("pid {}\n{command}\n", std::process::id());
            let _ = file.set_len(0);
            let _ = file.seek(SeekFrom::Start(0));
            let _ = file.write_all(holder.as_bytes());
            let _ = file.sync_all();
            return Ok(Held {
                file,
                path: path.to_path_buf(),
            });
        }
        Err(Error::Refused {
            message: format!(
                "the lock file {} keeps being replaced; is another gatefix starting and stopping?",
                path.display()
            ),
        })
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
    /// Releases both locks, leaving nothing behind that gatefix did not need: the site's
    /// lock file always goes, the ledger's when no ledger was made (a refused or empty
    /// apply), with the folders that only held them. Each file is removed while still
    /// locked, so a gatefix that opened it meanwhile finds the path changed and retries.
    fn drop(&mut self) {
        let ledger_dir = self.ledger.path.parent().map(Path::to_path_buf);
        if let Some(dir) = &ledger_dir
            && !dir.join("HEAD").exists()
        {
            let _ = std::fs::remove_file(&self.ledger.path);
            let _ = std::fs::remove_dir(dir);
        }
        let _ = self.ledger.file.unlock();
        let _ = std::fs::remove_file(&self.site.path);
        if let Some(folder) = self.site.path.parent() {
            let _ = std::fs::remove_dir(folder);
        }
        let _ = self.site.file.unlock();
    }
}
