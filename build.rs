//! Puts the git commit into `gatefix --version`. Outside a git checkout (a source tarball, an
//! sdist built into a wheel) `GATEFIX_COMMIT` may name it; otherwise the version says so.
//!
//! Every path handed to `rerun-if-changed` exists: cargo takes a missing one as changed on
//! every build, so a checkout without `.git/packed-refs` (or, after `git pack-refs`, without
//! the loose branch ref) would rebuild the crate on every cargo command.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// Watches `path` (as git names it, relative to the crate root or absolute) when it exists.
fn watch_if_present(path: &str) {
    if Path::new(path).exists() {
        println!("cargo:rerun-if-changed={path}");
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=GATEFIX_COMMIT");
    let commit = std::env::var("GATEFIX_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| {
            // Only this crate's own checkout: a source tarball unpacked inside some other
            // repository must not take that repository's commit.
            let top = git(&["rev-parse", "--show-toplevel"])?;
            let manifest = std::env::var("CARGO_MANIFEST_DIR").ok()?;
            let same = |a: &str| std::fs::canonicalize(a).ok();
            if same(&top)? != same(&manifest)? {
                return None;
            }
            // Rebuild when HEAD moves. HEAD names the branch; the branch's commit is in its
            // loose ref or in packed-refs, whichever exist; the HEAD reflog grows on every
            // commit, checkout and reset, also when a packed ref gains a loose copy.
            let mut watched = vec!["HEAD".to_string(), "logs/HEAD".into(), "packed-refs".into()];
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watched.push(branch);
            }
            for name in &watched {
                if let Some(path) = git(&["rev-parse", "--git-path", name]) {
                    watch_if_present(&path);
                }
            }
            git(&["rev-parse", "--short=10", "HEAD"])
        });
    let described = match commit {
        Some(commit) => format!("commit {commit}"),
        None => "commit unknown: built outside a git checkout".to_string(),
    };
    println!("cargo:rustc-env=GATEFIX_BUILD_COMMIT={described}");
}
