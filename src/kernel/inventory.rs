//! Directory scan: find candidate files, reject most by name and first bytes, parse the rest
//! in parallel.
//!
//! Files are memory-mapped so that a 500 MB `libtorch_cuda.so` costs only the pages the
//! header walk and the plain-data scan touch. A file that changes while mapped can fault the
//! process; site-packages is not expected to change during an audit.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;
use walkdir::WalkDir;

use super::error::FileError;
use super::model::{FileInventory, FileKind};
use super::parse::{Format, parse_bytes_lenient, sniff};

/// Enough for the ELF, fatbin and PTX sniffers.
const HEAD: u64 = 256;

/// Names that can hold device code: host ELFs (`.so`, `.so.N…`, `.o`), `.cubin`, `.fatbin`,
/// `.ptx`. Everything else in site-packages (Python, data) is skipped unread.
pub fn is_candidate_name(name: &OsStr) -> bool {
    // Judged by its ASCII extension: a name that is not UTF-8 (`\xff.cubin`) is still read.
    let name = String::from_utf8_lossy(name.as_encoded_bytes());
    let name = name.as_ref();
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if matches!(ext, "so" | "o" | "cubin" | "fatbin" | "ptx") {
        return true;
    }
    // libfoo.so.12 / libfoo.so.12.4.1: a version tail of digits and dots after ".so."
    name.split_once(".so.").is_some_and(|(_, tail)| {
        !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    })
}

/// Every file under `root` with device code, or with an error, sorted by path.
/// Symlinks are not followed (their targets inside `root` are scanned anyway, and those
/// outside must not be); `__pycache__` is skipped. Host ELFs without device code are omitted.
pub fn inventory_path(root: &Path) -> Vec<FileInventory> {
    let (paths, mut out) = candidates(root);
    out.par_extend(paths.par_iter().filter_map(|p| inventory_file(p)));
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Like `inventory_path`, but only files whose path relative to `root` passes `keep`: a
/// caller that needs a few libraries does not read every binary of a site.
pub fn inventory_matching(root: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<FileInventory> {
    let (paths, _) = candidates(root);
    let wanted: Vec<PathBuf> = paths
        .into_iter()
        .filter(|p| {
            p.strip_prefix(root)
                .is_ok_and(|r| keep(&r.to_string_lossy()))
        })
        .collect();
    let mut out: Vec<FileInventory> = wanted
        .par_iter()
        .filter_map(|p| inventory_file(p))
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn candidates(root: &Path) -> (Vec<PathBuf>, Vec<FileInventory>) {
    let mut paths = Vec::new();
    let mut errors = Vec::new();
    let walk = WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.file_name() != "__pycache__");
    for item in walk {
        match item {
            Ok(e) if e.file_type().is_file() && is_candidate_name(e.file_name()) => {
                paths.push(e.into_path())
            }
            Ok(_) => {}
            Err(err) => errors.extend(walk_error(err)),
        }
    }
    (paths, errors)
}

fn walk_error(err: walkdir::Error) -> Option<FileInventory> {
    let path = err.path()?.to_path_buf();
    let source = err.into_io_error()?;
    Some(unreadable(FileError::Io { path, source }))
}

fn unreadable(err: FileError) -> FileInventory {
    let path = match &err {
        FileError::Io { path, .. } | FileError::Parse { path, .. } => path.clone(),
    };
    FileInventory {
        path,
        kind: FileKind::Unreadable,
        size: 0,
        containers: Vec::new(),
        error: Some(err.to_string()),
    }
}

/// One file: `None` when it is not device code (wrong first bytes, or a host ELF without
/// any container and without errors).
pub fn inventory_file(path: &Path) -> Option<FileInventory> {
    match read_file(path) {
        Ok(found) => found,
        Err(source) => Some(unreadable(FileError::Io {
            path: path.to_path_buf(),
            source,
        })),
    }
}

fn read_file(path: &Path) -> std::io::Result<Option<FileInventory>> {
    let mut file = File::open(path)?;
    let mut head = Vec::with_capacity(HEAD as usize);
    (&mut file).take(HEAD).read_to_end(&mut head)?;
    let is_ptx_name = path.extension().is_some_and(|e| e == "ptx");
    match sniff(&head) {
        Some(Format::PtxText) if !is_ptx_name => return Ok(None),
        Some(_) => {}
        None => return Ok(None),
    }
    // SAFETY: read-only private mapping; see the module note on concurrent modification.
    let map = unsafe { Mmap::map(&file)? };
    Ok(from_bytes(path, &map))
}

fn from_bytes(path: &Path, data: &[u8]) -> Option<FileInventory> {
    let (parsed, error) = parse_bytes_lenient(data);
    let host = matches!(
        parsed.kind,
        FileKind::SharedLibrary | FileKind::Object | FileKind::Executable | FileKind::OtherElf
    );
    if host && parsed.containers.is_empty() && error.is_none() {
        return None;
    }
    let error = error.map(|source| {
        FileError::Parse {
            path: path.to_path_buf(),
            source,
        }
        .to_string()
    });
    Some(FileInventory {
        path: path.to_path_buf(),
        kind: parsed.kind,
        size: data.len() as u64,
        containers: parsed.containers,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_names() {
        for yes in [
            "_C.cpython-311-x86_64-linux-gnu.so",
            "libcudart.so.13",
            "libx.so.12.4.1",
            "k.o",
            "k.cubin",
            "k.fatbin",
            "k.ptx",
        ] {
            assert!(is_candidate_name(OsStr::new(yes)), "{yes}");
        }
        for no in [
            "x.py",
            "so",
            "libx.so.bak",
            "x.so.",
            "README",
            "x.pyc",
            "x.solib",
        ] {
            assert!(!is_candidate_name(OsStr::new(no)), "{no}");
        }
    }
}
