//! Fault injection for the crash test: `GATEFIX_FAULT_AT=N` kills the process with SIGKILL
//! (exactly what `kill -9` does) at the N-th fault point it reaches; `GATEFIX_FAULT_COUNT=1`
//! prints the number of points reached on exit, so a test can visit every one of them.
//! Without those variables a fault point costs one relaxed atomic increment.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

static REACHED: AtomicUsize = AtomicUsize::new(0);

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
    }
}
