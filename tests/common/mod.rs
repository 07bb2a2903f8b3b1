//! Shared by the CLI tests: run the built binary and read its one JSON document.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The gatefix binary the tests run: `GATEFIX_BIN` when set, else the one cargo built beside
/// this test. `.ci/run` points `GATEFIX_BIN` at the `dist` binary it builds for the wheel, so
/// the real-wheel suites check the binary users get without a third build of the crate.
#[allow(dead_code)] // not every test crate runs the binary
pub fn gatefix_bin() -> PathBuf {
    std::env::var_os("GATEFIX_BIN")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_gatefix")),
            PathBuf::from,
        )
}

/// Runs `gatefix ARGS...`, asserts success, and parses stdout as JSON.
#[allow(dead_code)] // not every test crate reads JSON
pub fn gatefix_json<I, S>(args: I) -> Value
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    serde_json::from_slice(&gatefix_stdout(args)).expect("stdout is one JSON document")
}

/// Runs `gatefix ARGS...` (with no `VIRTUAL_ENV`), asserts success, and returns stdout.
#[allow(dead_code)] // not every test crate runs the binary
pub fn gatefix_stdout<I, S>(args: I) -> Vec<u8>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(gatefix_bin());
    command.args(args).env_remove("VIRTUAL_ENV");
    let output = command.output().expect("the gatefix binary runs");
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

pub mod audits;
pub mod fixture;
