//! Writing site files so that a crash leaves either the old bytes or the new ones: a temp
//! file in the same folder, fsync, the old mode, rename over, fsync the folder. Also the
//! clean-up of stale bytecode and of temp files a crash left behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::fault;

/// The temp file a transaction writes `path` through; deterministic, so recovery finds it.
pub fn temp_path(path: &Path, txn: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.gatefix-{txn}.tmp"))
}

/// Replaces `path` with `bytes` atomically, keeping its permissions. On any failure the temp
/// file is removed: the original is untouched and nothing is left beside it.
pub fn replace_file(path: &Path, bytes: &[u8], txn: u32) -> std::io::Result<()> {
    let mode = std::fs::metadata(path)?.permissions();
    write_through_temp(path, bytes, txn, mode)
}

/// Writes a file that is missing (deleted since gatefix wrote it) as `replace_file` writes
/// one that is there: through a temp file, synced and renamed in, so a crash leaves it
/// absent or whole. Mode 0644, as pip installs sources.
pub fn restore_missing_file(path: &Path, bytes: &[u8], txn: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    write_through_temp(path, bytes, txn, std::fs::Permissions::from_mode(0o644))
}

fn write_through_temp(
    path: &Path,
    bytes: &[u8],
    txn: u32,
    mode: std::fs::Permissions,
) -> std::io::Result<()> {
    let temp = temp_path(path, txn);
    let _ = std::fs::remove_file(&temp); // a crash may have left one
    fault::write_point("temp file create")?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    fault::point("temp file created");
    let written = write_temp(&mut file, &temp, bytes, mode);
    drop(file);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(&temp, path) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    fault::point("file renamed into place");
    sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    fault::point("folder synced");
    Ok(())
}

fn write_temp(
    file: &mut File,
    temp: &Path,
    bytes: &[u8],
    mode: std::fs::Permissions,
) -> std::io::Result<()> {
    let half = bytes.len() / 2;
    fault::write_point("temp file first half")?;
    file.write_all(&bytes[..half])?;
    fault::point("temp file half written");
    fault::write_point("temp file second half")?;
    file.write_all(&bytes[half..])?;
    fault::point("temp file written");
    fault::write_point("temp file sync")?;
    file.sync_all()?;
    fault::point("temp file synced");
    std::fs::set_permissions(temp, mode)?;
    fault::point("temp file mode set");
    Ok(())
}

pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Removes `__pycache__/<module>.*.pyc` beside a source file: Python would otherwise keep
/// running the old code when the timestamps happen to agree.
pub fn remove_stale_bytecode(path: &Path) {
    let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) else {
        return;
    };
    let prefix = format!("{}.", stem.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir.join("__pycache__")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.ends_with(".pyc") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Removes a transaction's leftover temp file, if any; true when there was one.
pub fn remove_temp(path: &Path, txn: u32) -> bool {
    std::fs::remove_file(temp_path(path, txn)).is_ok()
}
