//! Finding the site-packages tree (a path, a venv, `$VIRTUAL_ENV`, `./.venv`, the interpreter
//! beside the executable, or `python3`'s purelib) and reading its distributions from
//! `*.dist-info` (METADATA, RECORD).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::gate::predicate::CudaVersion;

#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Distribution {
    pub name: String,
    pub version: String,
}

/// A site-packages root with its distributions and which one owns each file.
#[derive(Debug)]
pub struct Site {
    pub root: PathBuf,
    pub distributions: Vec<Distribution>,
    owners: LazyOwners,
}

/// Which distribution owns which file, from RECORD.
#[derive(Debug, Default)]
struct Owners {
    /// Relative path (with `/`) → index into `distributions`.
    by_path: HashMap<String, usize>,
    /// Top-level folder or module → distribution, for files RECORD does not list.
    top_level: HashMap<String, usize>,
    /// RECORD files that are there but cannot be used: (`<dist-info>/RECORD`, why).
    unusable: Vec<(String, String)>,
}

/// RECORD files list every file of a distribution (tens of thousands of lines for torch):
/// they are read on a thread of their own while the scan walks and parses, and waited for
/// at the first question about ownership.
#[derive(Debug)]
struct LazyOwners {
    /// (index into `distributions`, its `*.dist-info` folder).
    records: Vec<(usize, PathBuf)>,
    ready: OnceLock<Owners>,
    reading: Mutex<Option<JoinHandle<Owners>>>,
}

impl LazyOwners {
    fn read_in_background(records: Vec<(usize, PathBuf)>) -> LazyOwners {
        let moved = records.clone();
        let reading = std::thread::Builder::new()
            .name("gatefix-record".into())
            .spawn(move || read_records(&moved))
            .ok();
        LazyOwners {
            records,
            ready: OnceLock::new(),
            reading: Mutex::new(reading),
        }
    }

    fn get(&self) -> &Owners {
        self.ready.get_or_init(|| {
            let handle = self.reading.lock().ok().and_then(|mut h| h.take());
            // No thread could be started, or it died: read them here.
            handle
                .and_then(|h| h.join().ok())
                .unwrap_or_else(|| read_records(&self.records))
        })
    }
}

fn read_records(records: &[(usize, PathBuf)]) -> Owners {
    let mut owners = Owners::default();
    for (index, dir) in records {
        let path = dir.join("RECORD");
        let record = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            // No RECORD at all: nothing claims to list the files (an old or foreign installer).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                owners
                    .unusable
                    .push((record_name(dir), format!("cannot be read: {e}")));
                continue;
            }
        };
        if let Some(why) = not_text(&record) {
            owners.unusable.push((record_name(dir), why));
            continue;
        }
        for line in String::from_utf8_lossy(&record).lines() {
            let Some(path) = record_path(line) else {
                continue;
            };
            if path.starts_with("..") || path.contains(".dist-info/") {
                continue;
            }
            if let Some(top) = path.split('/').next() {
                let top = top.strip_suffix(".py").unwrap_or(top);
                owners.top_level.entry(top.to_string()).or_insert(*index);
            }
            owners.by_path.insert(path, *index);
        }
    }
    owners
}

/// `<name>.dist-info/RECORD`, as warnings name it.
fn record_name(dist_info: &Path) -> String {
    let folder = dist_info
        .file_name()
        .map(|n| path_text(Path::new(n)))
        .unwrap_or_default();
    format!("{folder}/RECORD")
}

/// Why a RECORD's bytes are not the CSV text pip writes, if they are not.
fn not_text(bytes: &[u8]) -> Option<String> {
    if bytes.contains(&0) {
        return Some("is not text (it holds NUL bytes)".into());
    }
    std::str::from_utf8(bytes)
        .err()
        .map(|e| format!("is not UTF-8 text (byte {})", e.valid_up_to()))
}

impl Site {
    /// RECORD files that are there but unusable (not text, unreadable), each with a warning
    /// that says what is lost: the distribution's files are attributed to no distribution,
    /// and `status` cannot compare them with what pip installed.
    pub fn record_warnings(&self) -> Vec<(String, String)> {
        self.owners
            .get()
            .unusable
            .iter()
            .map(|(file, why)| {
                (
                    file.clone(),
                    format!(
                        "skipped: this RECORD {why}; the distribution's files are attributed to no distribution and `gatefix status` cannot compare them with what pip installed"
                    ),
                )
            })
            .collect()
    }

    /// Reads the distributions of a site root.
    pub fn open(root: &Path) -> Result<Site> {
        let entries = std::fs::read_dir(root).map_err(|source| Error::Io {
            path: root.to_path_buf(),
            source,
        })?;
        let mut dist_infos: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "dist-info") && p.is_dir())
            .collect();
        dist_infos.sort();
        let mut distributions = Vec::new();
        let mut records = Vec::new();
        for dir in dist_infos {
            if let Some(dist) = read_metadata(&dir) {
                records.push((distributions.len(), dir));
                distributions.push(dist);
            }
        }
        Ok(Site {
            root: root.to_path_buf(),
            distributions,
            owners: LazyOwners::read_in_background(records),
        })
    }

    /// The distribution that owns a file (relative path with `/`).
    pub fn owner(&self, relative: &str) -> Option<&Distribution> {
        let owners = self.owners.get();
        let index = owners.by_path.get(relative).or_else(|| {
            let top = relative.split('/').next()?;
            owners.top_level.get(top.strip_suffix(".py").unwrap_or(top))
        })?;
        self.distributions.get(*index)
    }

    /// The CUDA version torch was built with, read as text from `torch/version.py`.
    pub fn torch_cuda(&self) -> Option<CudaVersion> {
        let text = std::fs::read_to_string(self.root.join("torch/version.py")).ok()?;
        text.lines().find_map(|line| {
            let rest = line.trim().strip_prefix("cuda")?;
            let rest = rest.trim_start();
            if !(rest.starts_with('=') || rest.starts_with(':')) {
                return None;
            }
            let value = rest.rsplit('=').next()?.trim();
            let value = value.trim_matches(|c| c == '\'' || c == '"');
            CudaVersion::parse(value)
        })
    }
}

fn read_metadata(dir: &Path) -> Option<Distribution> {
    let bytes = std::fs::read(dir.join("METADATA")).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut name = None;
    let mut version = None;
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_string());
        }
    }
    Some(Distribution {
        name: name?,
        version: version.unwrap_or_default(),
    })
}

/// What a distribution's RECORD says about one installed file.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Index into `Site::distributions`.
    pub dist: usize,
    /// `sha256=<urlsafe base64, no padding>` as RECORD writes it; `None` where RECORD lists
    /// the file without a hash (RECORD itself, files written after install).
    pub hash: Option<String>,
    /// RECORD lists the file more than once with different hashes (or two RECORDs list
    /// it): no single record of what pip installed.
    pub conflicting: bool,
}

impl Site {
    /// Every file inside the site that a RECORD lists, with its recorded hash. Read from the
    /// RECORD files again (the ownership map keeps no hashes, to keep `audit` lean).
    pub fn installed_files(&self) -> HashMap<String, Installed> {
        let mut out = HashMap::new();
        for (index, dir) in &self.owners.records {
            let record = std::fs::read(dir.join("RECORD")).unwrap_or_default();
            for line in String::from_utf8_lossy(&record).lines() {
                let Some(path) = record_path(line) else {
                    continue;
                };
                if safe_relative(Path::new(&path)).is_none() {
                    continue; // ../../bin/... lies outside the site
                }
                let hash = record_hash(line).filter(|h| h.starts_with("sha256="));
                let conflicting = out
                    .get(&path)
                    .is_some_and(|old: &Installed| old.dist != *index || old.hash != hash);
                let conflicting = conflicting || out.get(&path).is_some_and(|old| old.conflicting);
                out.insert(
                    path,
                    Installed {
                        dist: *index,
                        hash,
                        conflicting,
                    },
                );
            }
        }
        out
    }

    /// The exact command that puts a distribution's files back at the bytes pip installed.
    pub fn reinstall_command(&self, dist: usize) -> Option<String> {
        let d = self.distributions.get(dist)?;
        Some(format!(
            "pip install --force-reinstall --no-deps {}=={}",
            d.name, d.version
        ))
    }
}

/// A file's digest in RECORD's form: `sha256=` and the urlsafe base64 of the hash, unpadded.
pub fn record_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256={}", base64_url(&Sha256::digest(bytes)))
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// The hash field of a RECORD line (the second CSV field).
fn record_hash(line: &str) -> Option<String> {
    let line = line.trim();
    let rest = if let Some(rest) = line.strip_prefix('"') {
        // Skip the quoted path ("" is an escaped quote).
        let mut i = 0;
        let bytes = rest.as_bytes();
        loop {
            match bytes.get(i) {
                Some(b'"') if bytes.get(i + 1) == Some(&b'"') => i += 2,
                Some(b'"') => break &rest[i + 1..],
                Some(_) => i += 1,
                None => return None,
            }
        }
    } else {
        &line[line.find(',')?..]
    };
    let field = rest.strip_prefix(',')?.split(',').next()?.trim();
    (!field.is_empty()).then(|| field.to_string())
}

/// The path field of a RECORD line (CSV; the path may be quoted).
fn record_path(line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let path = if let Some(rest) = line.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    out.push('"');
                    chars.next();
                } else {
                    break;
                }
            } else {
                out.push(c);
            }
        }
        out
    } else {
        line.split(',').next()?.to_string()
    };
    Some(path.replace('\\', "/"))
}

/// Resolves what the user named (or nothing) to a site-packages folder.
pub fn discover(path: Option<&Path>) -> Result<PathBuf> {
    match path {
        Some(path) => site_of(path),
        None => {
            if let Some(venv) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
                return site_of(Path::new(&venv));
            }
            let local = Path::new(".venv");
            if local.is_dir() {
                return site_of(local);
            }
            if let Some(python) = own_interpreter() {
                return python_purelib(&python);
            }
            python_purelib(Path::new("python3"))
        }
    }
}

/// The interpreter installed beside this executable (`pip install gatefix` into a venv puts
/// both in its `bin/`), unless its site holds gatefix alone: then it is a tool environment
/// (`uvx`, `pipx`) with nothing to audit.
fn own_interpreter() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?;
    let python = ["python3", "python"]
        .iter()
        .map(|name| bin.join(name))
        .find(|p| p.is_file())?;
    let site = python_purelib(&python).ok()?;
    let others = std::fs::read_dir(&site)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".dist-info"))
        .filter(|name| {
            let dist = name
                .split('-')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            !matches!(dist.as_str(), "gatefix" | "pip" | "setuptools" | "wheel")
        })
        .count();
    (others > 0).then_some(python)
}

/// A venv root becomes its `lib/python3.*/site-packages`; anything else is used as is.
fn site_of(path: &Path) -> Result<PathBuf> {
    if !path.exists() {
        return Err(Error::input(format!(
            "{}: no such file or folder; name a site-packages folder, a venv, or a folder of Python files",
            path.display()
        )));
    }
    if !path.is_dir() {
        return Err(Error::input(format!(
            "{}: not a folder; name a site-packages folder, a venv, or a folder of Python files",
            path.display()
        )));
    }
    if let Some(site) = venv_site_packages(path)? {
        return Ok(site);
    }
    Ok(path.to_path_buf())
}

fn venv_site_packages(root: &Path) -> Result<Option<PathBuf>> {
    let windows = root.join("Lib").join("site-packages");
    let lib = root.join("lib");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("python3"))
                })
                .map(|p| p.join("site-packages"))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    match candidates.len() {
        0 if windows.is_dir() => Ok(Some(windows)),
        0 if root.join("pyvenv.cfg").is_file() => Err(Error::input(format!(
            "{}: has pyvenv.cfg but no lib/python3.*/site-packages; is the venv complete?",
            root.display()
        ))),
        0 => Ok(None),
        1 => Ok(candidates.pop()),
        _ => {
            let chosen = candidates.pop();
            if let Some(chosen) = &chosen {
                eprintln!(
                    "gatefix: warning: {} has several site-packages; using {}",
                    root.display(),
                    chosen.display()
                );
            }
            Ok(chosen)
        }
    }
}

/// Asks a Python interpreter where its purelib is; nothing of the site is imported (`-I`
/// isolates it from the environment and the working folder).
pub fn python_purelib(python: &Path) -> Result<PathBuf> {
    let output = Command::new(python)
        .args([
            "-I",
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .map_err(|e| {
            Error::input(format!(
                "{} could not be run ({e}); name a site-packages folder or a venv",
                python.display()
            ))
        })?;
    if !output.status.success() {
        return Err(Error::input(format!(
            "{} could not report its purelib; name a site-packages folder or a venv",
            python.display()
        )));
    }
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    site_of(&path)
}

/// A path as text: valid UTF-8 as is, any other byte as `\xNN` (so two names that differ
/// only in undecodable bytes stay two names; nothing is dropped).
pub fn path_text(path: &Path) -> String {
    let bytes = path.as_os_str().as_encoded_bytes();
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.to_string();
    }
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Serialises a path as `path_text` writes it (serde refuses a path that is not UTF-8).
pub fn serialize_path<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path_text(path))
}

/// A relative path with `/` separators, or `None` if it is absolute or climbs with `..`.
pub fn safe_relative(path: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_string()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Resolves a relative path inside the site, refusing absolute paths, `..`, and symlinks that
/// lead out of the root, before anything is read.
pub fn site_path(site_root: &Path, relative: &str) -> Result<PathBuf, String> {
    let clean = safe_relative(Path::new(relative))
        .ok_or_else(|| format!("`{relative}` is absolute or climbs out with `..`; refused"))?;
    let root = site_root
        .canonicalize()
        .map_err(|e| format!("{}: {e}", site_root.display()))?;
    let joined = root.join(&clean);
    let resolved = joined.canonicalize().map_err(|e| format!("{clean}: {e}"))?;
    if !resolved.starts_with(&root) {
        return Err(format!(
            "{clean} leads out of the site root through a symlink (to {}); refused",
            resolved.display()
        ));
    }
    let metadata = std::fs::metadata(&resolved).map_err(|e| format!("{clean}: {e}"))?;
    if !metadata.is_file() {
        return Err(format!("{clean} is not a regular file; refused"));
    }
    Ok(joined)
}

/// `site_path` for a file that is not there (deleted since gatefix wrote it), to write it
/// again: `None` when something is at that path. The nearest folder above it that exists
/// must resolve inside the root; below it nothing exists, so no symlink can lead out.
pub fn missing_site_path(site_root: &Path, relative: &str) -> Option<Result<PathBuf, String>> {
    let clean = safe_relative(Path::new(relative))?;
    let joined = site_root.join(&clean);
    if std::fs::symlink_metadata(&joined).is_ok() {
        return None;
    }
    let check = || {
        let root = site_root
            .canonicalize()
            .map_err(|e| format!("{}: {e}", site_root.display()))?;
        let existing = joined
            .ancestors()
            .find(|p| std::fs::symlink_metadata(p).is_ok())
            .ok_or_else(|| format!("{clean}: no folder of it exists"))?;
        let resolved = existing
            .canonicalize()
            .map_err(|e| format!("{clean}: {e}"))?;
        if !resolved.starts_with(&root) {
            return Err(format!(
                "{clean} leads out of the site root through a symlink (to {}); refused",
                resolved.display()
            ));
        }
        Ok(joined.clone())
    };
    Some(check())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_paths_with_quotes_and_commas() {
        assert_eq!(record_path("a/b.py,sha256=x,12"), Some("a/b.py".into()));
        assert_eq!(
            record_path("\"a/b,c.py\",sha256=x,12"),
            Some("a/b,c.py".into())
        );
        assert_eq!(record_path(""), None);
    }

    #[test]
    fn record_hashes_and_digests() {
        assert_eq!(
            record_hash("a/b.py,sha256=abc,12"),
            Some("sha256=abc".into())
        );
        assert_eq!(
            record_hash("\"a/b,\"\"c.py\",sha256=x,12"),
            Some("sha256=x".into())
        );
        assert_eq!(record_hash("a/RECORD,,"), None);
        // The digest pip writes for an empty file.
        assert_eq!(
            record_digest(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        assert_eq!(base64_url(b"ab"), "YWI");
        assert_eq!(base64_url(b"abcd"), "YWJjZA");
    }

    #[test]
    fn site_paths_stay_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.py"), "x = 1\n").unwrap();
        std::fs::write(outside.path().join("b.py"), "y = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("b.py"), root.path().join("b.py")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("pkg")).unwrap();
        assert!(site_path(root.path(), "a.py").is_ok());
        for bad in ["../a.py", "/etc/passwd", "b.py", "pkg/b.py", "missing.py"] {
            assert!(site_path(root.path(), bad).is_err(), "{bad}");
        }
        // A missing file may be written again only below folders inside the root.
        let missing = |p: &str| missing_site_path(root.path(), p);
        assert!(missing("a.py").is_none(), "it is there");
        assert!(missing("b.py").is_none(), "a symlink is there");
        assert_eq!(missing("gone.py").unwrap(), Ok(root.path().join("gone.py")));
        assert!(missing("new/dir/gone.py").unwrap().is_ok());
        assert!(missing("pkg/gone.py").unwrap().is_err(), "pkg leads out");
        assert!(missing("../gone.py").is_none());
    }

    #[test]
    fn safe_relative_rejects_escapes() {
        assert_eq!(safe_relative(Path::new("a/./b.py")), Some("a/b.py".into()));
        assert_eq!(safe_relative(Path::new("../x.py")), None);
        assert_eq!(safe_relative(Path::new("/etc/passwd")), None);
    }
}
