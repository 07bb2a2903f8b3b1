//! Free space, checked before the first write of a transaction: the site needs room for a
//! temp copy of each new file, the ledger for the pre- and post-images (zlib rarely grows
//! them; counted whole) and its trees and commits. A margin covers the file system's own
//! blocks. Not enough room is an error before anything is written.

use std::path::Path;

use super::fault;
use crate::error::{Error, Result};

/// Added to every need: metadata blocks, trees, commits, refs, the lock file.
const MARGIN: u64 = 1 << 20;
/// Per file in the ledger: a tree per folder level and the index entry.
const PER_FILE: u64 = 16 << 10;

/// Free bytes for an unprivileged writer on the file system holding `path` (or its nearest
/// existing ancestor), and that file system's id.
fn free(path: &Path) -> Option<(u64, u64)> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let bytes = (s.f_bavail as u64).saturating_mul(s.f_frsize as u64);
    let bytes = fault::free_bytes_override().unwrap_or(bytes);
    Some((bytes, s.f_fsid as u64))
}

/// `sizes`: per file the transaction writes, its bytes before and after.
pub fn check(site_root: &Path, ledger_dir: &Path, sizes: &[(usize, usize)]) -> Result<()> {
    let site_need: u64 = sizes.iter().map(|&(_, new)| new as u64).sum::<u64>() + MARGIN;
    let ledger_need: u64 = sizes
        .iter()
        .map(|&(old, new)| (old + new) as u64 + PER_FILE)
        .sum::<u64>()
        + MARGIN;
    let (Some((site_free, site_fs)), Some((ledger_free, ledger_fs))) =
        (free(site_root), free(ledger_dir))
    else {
        return Ok(()); // statvfs unavailable: the writes themselves will tell
    };
    let short = |what: &str, path: &Path, need: u64, have: u64| {
        Error::input(format!(
            "not enough free space for this transaction: {what} {} needs {} bytes (with a margin), {} are free; \
             nothing was written. Free some space and run the command again",
            path.display(),
            need,
            have
        ))
    };
    if site_fs == ledger_fs {
        let need = site_need + ledger_need;
        if site_free < need {
            return Err(short(
                "the site and its ledger on",
                site_root,
                need,
                site_free,
            ));
        }
        return Ok(());
    }
    if site_free < site_need {
        return Err(short("the site", site_root, site_need, site_free));
    }
    if ledger_free < ledger_need {
        return Err(short("the ledger", ledger_dir, ledger_need, ledger_free));
    }
    Ok(())
}
