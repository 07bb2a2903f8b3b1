//! Fault injection for the crash test: `GATEFIX_FAULT_AT=N` kills the process with SIGKILL
//! (exactly what `kill -9` does) at the N-th fault point it reaches; `GATEFIX_FAULT_COUNT=1`
//! prints the number of points reached on exit, so a test can visit every one of them.
//! Without those variables a fault point costs one relaxed atomic increment.
//!
//! Full disks: `GATEFIX_FAULT_ENOSPC=N` makes the N-th *write point* (every write gatefix
//! makes to the site or the ledger passes one) fail with `ENOSPC`, as a full disk would, and
//! `GATEFIX_FAULT_FREE_BYTES=N` makes the free-space check see N free bytes.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

static REACHED: AtomicUsize = AtomicUsize::new(0);
static WRITES: AtomicUsize = AtomicUsize::new(0);

fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok()
}

/// A write gatefix is about to make; fails with `ENOSPC` where the test asks for it.
pub fn write_point(name: &str) -> std::io::Result<()> {
    static AT: OnceLock<Option<usize>> = OnceLock::new();
    let n = WRITES.fetch_add(1, Ordering::Relaxed) + 1;
    if *AT.get_or_init(|| env_number("GATEFIX_FAULT_ENOSPC")) == Some(n) {
        eprintln!("gatefix: fault injection: no space left at write point {n} ({name})");
        return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
    }
    Ok(())
}

/// The free space the space check should see instead of the real one, if a test says so.
pub fn free_bytes_override() -> Option<u64> {
    env_number("GATEFIX_FAULT_FREE_BYTES").map(|n| n as u64)
}

fn kill_at() -> Option<usize> {
    static AT: OnceLock<Option<usize>> = OnceLock::new();
    *AT.get_or_init(|| std::env::var("GATEFIX_FAULT_AT").ok()?.parse().ok())
}

/// A point where the process may die; `name` says where, for the test's messages.
pub fn point(name: &str) {
    let n = REACHED.fetch_add(1, Ordering::Relaxed) + 1;
    if kill_at() == Some(n) {
        eprintln!("gatefix: fault injection: killed at point {n} ({name})");
        // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Prints how many points were reached, when asked to (at the end of a command).
pub fn report() {
    if std::env::var_os("GATEFIX_FAULT_COUNT").is_some() {
        eprintln!(
            "gatefix: fault points reached: {}",
            REACHED.load(Ordering::Relaxed)
        );
        eprintln!(
            "gatefix: write points reached: {}",
            WRITES.load(Ordering::Relaxed)
        );
    }
}
