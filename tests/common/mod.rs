//! Shared by the CLI tests: run the built binary and read its one JSON document.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

/// Runs `gatefix ARGS...`, asserts success, and parses stdout as JSON.
#[allow(dead_code)] // not every test crate reads JSON
pub fn gatefix_json<I, S>(args: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let output = Command::new(env!("CARGO_BIN_EXE_gatefix"))
        .args(args)
        .output()
        .expect("the gatefix binary runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON document")
}

pub mod audits;
pub mod fixture;
