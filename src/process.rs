//! What gatefix asks of the operating system for its own process.

/// Stack of every thread that resolves gates or reads the site beside the scan (`main`,
/// `Beside`).
pub const RESOLVER_STACK_BYTES: usize = 64 << 20;

/// Whether the kernel may back this process's memory with transparent huge pages. mimalloc
/// asks for them (`madvise`) on the regions it maps; an audit then spends much of its system
/// time zeroing 2 MiB pages, and compacting memory to find them where memory is fragmented,
/// for blocks it frees a moment later. Measured on sglang 0.5.23 + flashinfer 0.7.2, 2 cores:
/// the default audit 8.9 s with them, 7.4 s without (medians of 4; system time 4.1 s against
/// 1.0 s). `main` turns them off first thing; the setting is inherited by child processes,
/// so it is turned back on before gatefix runs a user's command (`apply --verify`). Linux
/// only; a kernel without the call keeps its default, which is only slower.
pub fn transparent_huge_pages(allowed: bool) {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes an integer flag and no pointers.
    unsafe {
        libc::prctl(
            libc::PR_SET_THP_DISABLE,
            libc::c_ulong::from(!allowed),
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = allowed;
}

/// Work that runs beside a foreground job (the verdicts' reading of the site beside the
/// scan) on the cores that job leaves idle, and at full speed once it is done.
///
/// The foreground job keeps both cores of a small machine busy for most of its run, but not
/// all of it: its longest modules leave one core idle at the end of a phase, and reading
/// files waits on the disk. Background work sharing the same threads slows the foreground
/// by what it takes (0.46 s of a 3.4 s scan on sglang 0.5.23 + flashinfer 0.7.2, 2 cores).
/// On threads that yield to every other thread of the machine (nice 19: the scheduler gives
/// them about 1.5% of a core against one at the default priority) it runs only where a
/// core would idle. A stage that starts after the foreground has finished runs on the
/// shared pool instead: a nice value cannot be lowered again without privileges, and work
/// nobody waits behind must not crawl on a machine busy with other processes.
pub struct Beside {
    /// Threads at the lowest priority, started by the first stage; `None` where the system
    /// cannot lower one thread's priority alone (off Linux, the nice value belongs to the
    /// process) or the pool could not be started: the work then shares the foreground's
    /// threads.
    yielding: std::sync::OnceLock<Option<rayon::ThreadPool>>,
    foreground_done: std::sync::atomic::AtomicBool,
}

impl Default for Beside {
    fn default() -> Beside {
        Beside::new()
    }
}

impl Beside {
    pub fn new() -> Beside {
        Beside {
            yielding: std::sync::OnceLock::new(),
            foreground_done: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs one stage of the background work: on the yielding threads while the foreground
    /// runs, else on the shared pool.
    pub fn stage<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        let foreground_done = self
            .foreground_done
            .load(std::sync::atomic::Ordering::Acquire);
        if foreground_done {
            return work();
        }
        match self.yielding.get_or_init(yielding_pool) {
            Some(pool) => pool.install(work),
            None => work(),
        }
    }

    /// Says the foreground is done: stages that start after this run at full priority.
    pub fn foreground_done(&self) {
        self.foreground_done
            .store(true, std::sync::atomic::Ordering::Release);
    }
}

/// As many threads as the machine has cores, each lowering its own priority to the least
/// (Linux keeps a nice value per thread).
fn yielding_pool() -> Option<rayon::ThreadPool> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .stack_size(RESOLVER_STACK_BYTES)
        .thread_name(|i| format!("gatefix-beside-{i}"))
        .start_handler(|_| lowest_priority_for_this_thread())
        .build()
        .ok()
}

fn lowest_priority_for_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` takes nothing; `setpriority` takes integers only. A failure leaves the
    // thread at its priority, which is only slower for the foreground.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nice value of the calling thread (Linux keeps one per thread).
    #[cfg(target_os = "linux")]
    fn own_nice() -> i32 {
        // SAFETY: integers only; `errno` is not read, since -1 is no value asked for here.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_stage_yields_while_the_foreground_runs_and_not_after() {
        let beside = Beside::new();
        let caller = own_nice();
        let (name, nice) =
            beside.stage(|| (std::thread::current().name().map(String::from), own_nice()));
        assert!(name.is_some_and(|n| n.starts_with("gatefix-beside-")));
        assert_eq!(
            nice, 19,
            "a stage beside the foreground runs at the lowest priority"
        );
        assert_eq!(
            own_nice(),
            caller,
            "the caller's own priority is left alone"
        );
        beside.foreground_done();
        let (thread, nice) = beside.stage(|| (std::thread::current().id(), own_nice()));
        assert_eq!(
            thread,
            std::thread::current().id(),
            "after the foreground, here"
        );
        assert_eq!(nice, caller);
    }

    #[test]
    fn a_stage_gives_back_what_its_work_gives() {
        let beside = Beside::new();
        let sum: u64 = beside.stage(|| {
            use rayon::prelude::*;
            (1..=1000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 500_500);
        beside.foreground_done();
        assert_eq!(beside.stage(|| "after"), "after");
    }
}
