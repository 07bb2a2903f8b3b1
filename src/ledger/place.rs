//! Where a site's ledger lives, and where it may not.
//!
//! Chosen in this order: `--ledger DIR`, then `$GATEFIX_LEDGER`, then the pointer an earlier
//! transaction with a ledger elsewhere left in the site's `.gatefix` folder, then the default
//! (`<venv>/.gatefix/ledger.git`, or `<site>/.gatefix/ledger.git` outside a venv). So a
//! ledger named once is found again without the flag, and leaving the flag out cannot hide a
//! transaction.
//!
//! Refused: `/`, the site root or any folder inside it (except the default place, the site's
//! own `.gatefix` folder), and a folder that holds other things and is not a gatefix ledger.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::path::{absolute, real};

pub const ENV: &str = "GATEFIX_LEDGER";
/// The pointer file, in the folder that holds the default ledger.
const POINTER: &str = "ledger-path";
/// Written into every ledger gatefix creates, so a later command knows the folder is one.
pub const MARKER: &str = "gatefix-ledger";

/// The folder the default ledger and the pointer live in.
fn base(site_root: &Path) -> PathBuf {
    let venv = site_root
        .ancestors()
        .take(5)
        .find(|dir| dir.join("pyvenv.cfg").is_file());
    venv.unwrap_or(site_root).join(".gatefix")
}

/// `<venv>/.gatefix/ledger.git`, or `<site>/.gatefix/ledger.git` outside a venv.
pub fn default_location(site_root: &Path) -> PathBuf {
    base(site_root).join("ledger.git")
}

/// The site's own lock file, beside the default ledger and the pointer (`lock::SiteLock`).
pub fn site_lock_path(site_root: &Path) -> PathBuf {
    base(site_root).join("site.lock")
}

pub fn pointer_path(site_root: &Path) -> PathBuf {
    base(site_root).join(POINTER)
}

/// The ledger an earlier `--ledger` recorded for this site, if any.
pub fn recorded(site_root: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(pointer_path(site_root)).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// How the ledger was chosen, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env,
    Pointer,
    Default,
}

/// The ledger folder for a site, checked.
pub fn resolve(site_root: &Path, explicit: Option<&Path>) -> Result<(PathBuf, Source)> {
    let env = std::env::var_os(ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let (dir, source) = match (explicit, env, recorded(site_root)) {
        (Some(dir), _, _) => (dir.to_path_buf(), Source::Flag),
        (None, Some(dir), _) => (dir, Source::Env),
        (None, None, Some(dir)) => (dir, Source::Pointer),
        (None, None, None) => (default_location(site_root), Source::Default),
    };
    let dir = absolute(&dir);
    check(site_root, &dir).map_err(|why| {
        let how = match source {
            Source::Flag => "--ledger".to_string(),
            Source::Env => format!("${ENV}"),
            Source::Pointer => format!("the pointer {}", pointer_path(site_root).display()),
            Source::Default => "the default ledger place".to_string(),
        };
        Error::input(format!(
            "{how} {}: {why}; name an empty or new folder outside the site, such as {}",
            dir.display(),
            default_location(site_root).display()
        ))
    })?;
    Ok((dir, source))
}

fn check(site_root: &Path, dir: &Path) -> std::result::Result<(), String> {
    let real_dir = real(dir);
    if real_dir.parent().is_none() {
        return Err("the file system root cannot hold a ledger".into());
    }
    let site = real(&absolute(site_root));
    let default = real(&absolute(&default_location(site_root)));
    if real_dir.starts_with(&site) && real_dir != default {
        return Err(if real_dir == site {
            "that is the site root: the ledger's files would lie among the packages".into()
        } else {
            format!(
                "that is inside the site {} (pip and Python would see it)",
                site.display()
            )
        });
    }
    if site.starts_with(&real_dir) {
        return Err(format!(
            "that folder holds the site {} itself",
            site.display()
        ));
    }
    if real_dir.is_file() {
        return Err("that is a file, not a folder".into());
    }
    if let Ok(mut entries) = std::fs::read_dir(&real_dir)
        && entries.next().is_some()
        && !is_ledger(&real_dir)
    {
        return Err("that folder holds other things and is not a gatefix ledger".into());
    }
    Ok(())
}

/// A folder gatefix made: a bare repository with the marker, or (ledgers made before the
/// marker) a bare repository with gatefix's lock file; a folder with only the lock file;
/// a ledger whose creation was cut short (`half_made`); or one with the marker whose `HEAD`
/// file was lost (`Ledger::open` writes it again).
pub fn is_ledger(dir: &Path) -> bool {
    let lock = dir.join("gatefix.lock").is_file();
    let marker = dir.join(MARKER).is_file();
    let bare = dir.join("HEAD").is_file() && dir.join("objects").is_dir();
    let only_lock = std::fs::read_dir(dir)
        .map(|e| e.flatten().all(|e| e.file_name() == "gatefix.lock"))
        .unwrap_or(false);
    (bare && (lock || marker)) || only_lock || half_made(dir) || head_lost(dir)
}

/// What creating a bare repository writes, and gatefix's own files: a folder holding only
/// these (and no object or ref) is a ledger whose creation stopped part way.
const CREATION_ENTRIES: &[&str] = &[
    "HEAD",
    "config",
    "description",
    "hooks",
    "info",
    "objects",
    "refs",
    "branches",
    "logs",
    "gatefix.lock",
    MARKER,
];

/// A ledger gatefix began to create and never finished (a kill, a full disk): no entry but
/// those creation writes (and libgit2's `.lock` files), not one object or ref, and the
/// marker (written last) missing or `HEAD` missing. It records no transaction, so it is
/// made again from scratch.
pub fn half_made(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut any = false;
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(CREATION_ENTRIES.contains(&name.as_ref()) || name.ends_with(".lock")) {
            return false;
        }
        any |= name != "gatefix.lock";
    }
    let finished = dir.join(MARKER).is_file() && dir.join("HEAD").is_file();
    any && !finished && holds_no_file(&dir.join("objects")) && holds_no_file(&dir.join("refs"))
}

/// A ledger with the marker, its objects and refs, whose `HEAD` file is gone.
pub fn head_lost(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
        && !dir.join("HEAD").exists()
        && dir.join("objects").is_dir()
        && dir.join("refs").is_dir()
        && !(holds_no_file(&dir.join("objects")) && holds_no_file(&dir.join("refs")))
}

/// Whether a folder (missing or not) has no plain file anywhere below it.
fn holds_no_file(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return !dir.exists();
    };
    entries.flatten().all(|entry| match entry.file_type() {
        Ok(kind) if kind.is_dir() => holds_no_file(&entry.path()),
        _ => false,
    })
}

/// Records a ledger that is not at the default place, so later commands find it without the
/// flag. Nothing is written for the default place (and an old pointer is removed).
pub fn record(site_root: &Path, dir: &Path) -> Result<()> {
    let pointer = pointer_path(site_root);
    let dir = absolute(dir);
    if real(&dir) == real(&absolute(&default_location(site_root))) {
        if pointer.is_file() {
            std::fs::remove_file(&pointer).map_err(|source| Error::Io {
                path: pointer.clone(),
                source,
            })?;
        }
        return Ok(());
    }
    if recorded(site_root).is_some_and(|p| absolute(&p) == dir) {
        return Ok(());
    }
    let io = |source| Error::Io {
        path: pointer.clone(),
        source,
    };
    if let Some(parent) = pointer.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let temp = pointer.with_extension("tmp");
    std::fs::write(&temp, format!("{}\n", dir.display())).map_err(io)?;
    std::fs::rename(&temp, &pointer).map_err(io)
}

/// The other ledger a site may have (the recorded one, or the default) when `dir` was chosen
/// by the flag or the environment: transactions in it would be hidden.
pub fn other_ledger(site_root: &Path, dir: &Path) -> Option<PathBuf> {
    let candidates = [recorded(site_root), Some(default_location(site_root))];
    candidates
        .into_iter()
        .flatten()
        .map(|p| absolute(&p))
        .find(|p| real(p) != real(dir) && p.join("HEAD").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_places() {
        let temp = tempfile::tempdir().unwrap();
        let site = temp.path().join("site");
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::write(temp.path().join("busy.txt"), "x").unwrap();
        for bad in [
            PathBuf::from("/"),
            site.clone(),
            site.join("pkg/ledger"),
            site.join("new/ledger.git"),
            temp.path().to_path_buf(),
        ] {
            assert!(check(&site, &bad).is_err(), "{}", bad.display());
        }
        for good in [
            default_location(&site),
            temp.path().join("elsewhere/ledger.git"),
        ] {
            assert!(check(&site, &good).is_ok(), "{}", good.display());
        }
    }
}
