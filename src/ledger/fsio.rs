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

/// Removes the `__pycache__/<module>.*.pyc` beside a source file just written that Python
/// would trust for the new source, and only those: it would run the old code from them. A
/// pyc Python checks and finds stale it ignores and rewrites itself, so it is left alone,
/// and after a revert the site holds pip's bytecode again, byte for byte.
pub fn remove_stale_bytecode(path: &Path) {
    let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) else {
        return;
    };
    let Ok(source) = std::fs::metadata(path) else {
        return;
    };
    let prefix = format!("{}.", stem.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir.join("__pycache__")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.ends_with(".pyc") {
            let mut header = [0u8; 16];
            let read = File::open(entry.path()).and_then(|mut f| {
                use std::io::Read;
                f.read_exact(&mut header)
            });
            // One Python cannot read whole it cannot trust either: left alone.
            if read.is_ok() && trusted_for(&header, &source) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether Python would run a pyc with this header (PEP 552) for a source with this
/// metadata without compiling the source again. A timestamp pyc is trusted when the source's
/// mtime (whole seconds) and size match its own; a hash-based one when it says not to check
/// the source (`unchecked-hash`; a `checked-hash` one is checked by default). A header Python
/// rejects (bad magic) is not trusted; flags it does not know are taken as trusted, to be
/// removed.
fn trusted_for(header: &[u8; 16], source: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    if header[2..4] != *b"\r\n" {
        return false;
    }
    let word =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    match word(4) {
        0 => word(8) == source.mtime() as u32 && word(12) == source.len() as u32,
        // hash-based, checked against the source (CPython's default for these).
        0b11 => false,
        _ => true,
    }
}

/// Removes a transaction's leftover temp file, if any; true when there was one.
pub fn remove_temp(path: &Path, txn: u32) -> bool {
    std::fs::remove_file(temp_path(path, txn)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(flags: u32, a: u32, b: u32) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[..4].copy_from_slice(b"\xa7\x0d\r\n"); // CPython 3.11's magic
        h[4..8].copy_from_slice(&flags.to_le_bytes());
        h[8..12].copy_from_slice(&a.to_le_bytes());
        h[12..16].copy_from_slice(&b.to_le_bytes());
        h
    }

    #[test]
    fn only_bytecode_python_would_trust_for_the_new_source_is_removed() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("m.py");
        std::fs::write(&source, "x = 2\n").unwrap();
        let meta = std::fs::metadata(&source).unwrap();
        let (mtime, size) = (meta.mtime() as u32, meta.len() as u32);
        assert!(
            trusted_for(&header(0, mtime, size), &meta),
            "timestamp and size agree"
        );
        assert!(
            !trusted_for(&header(0, mtime - 1, size), &meta),
            "older source"
        );
        assert!(
            !trusted_for(&header(0, mtime, size + 1), &meta),
            "other size"
        );
        assert!(trusted_for(&header(0b01, 7, 7), &meta), "unchecked hash");
        assert!(!trusted_for(&header(0b11, 7, 7), &meta), "checked hash");
        assert!(trusted_for(&header(0b100, 7, 7), &meta), "unknown flags");
        let mut bad = header(0, mtime, size);
        bad[3] = b'x';
        assert!(!trusted_for(&bad, &meta), "not a pyc");

        let cache = dir.path().join("__pycache__");
        std::fs::create_dir(&cache).unwrap();
        let stale = cache.join("m.cpython-311.pyc");
        std::fs::write(&stale, header(0, mtime - 1, size)).unwrap();
        let trusted = cache.join("m.cpython-312.pyc");
        std::fs::write(&trusted, header(0b01, 0, 0)).unwrap();
        let short = cache.join("m.cpython-313.pyc");
        std::fs::write(&short, b"short").unwrap();
        let other = cache.join("n.cpython-311.pyc");
        std::fs::write(&other, header(0b01, 0, 0)).unwrap();
        remove_stale_bytecode(&source);
        assert!(stale.exists() && short.exists() && other.exists());
        assert!(!trusted.exists());
    }
}
