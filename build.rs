//! Puts the git commit into `gatefix --version`. Outside a git checkout (a source tarball, an
//! sdist built into a wheel) `GATEFIX_COMMIT` may name it; otherwise the version says so.

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
            // Rebuild when HEAD moves: HEAD itself, the branch it names, packed refs.
            for path in ["HEAD", "packed-refs"] {
                if let Some(p) = git(&["rev-parse", "--git-path", path]) {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
                && let Some(p) = git(&["rev-parse", "--git-path", &branch])
            {
                println!("cargo:rerun-if-changed={p}");
            }
            git(&["rev-parse", "--short=10", "HEAD"])
        });
    let described = match commit {
        Some(commit) => format!("commit {commit}"),
        None => "commit unknown: built outside a git checkout".to_string(),
    };
    println!("cargo:rustc-env=GATEFIX_BUILD_COMMIT={described}");
}
