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
/// core would idle. Such threads also yield to other processes, so they are used only where
/// the machine has idle cores to give: not where, when the audit starts, at least as many
/// other threads are runnable as there are cores (a parallel build, a busy CI runner), since
/// work there at the lowest priority could wait for all of them. And a stage that starts
/// after the foreground has finished runs on the shared pool: a nice value cannot be lowered
/// again without privileges. (A machine that becomes saturated while a stage runs still
/// slows that stage.)
pub struct Beside {
    /// Threads at the lowest priority, started by the first stage; `None` where the machine
    /// has no idle core to give, the system cannot lower one thread's priority alone (off
    /// Linux, the nice value belongs to the process) or the pool could not be started: the
    /// work then shares the foreground's threads.
    yielding: std::sync::OnceLock<Option<rayon::ThreadPool>>,
    /// Whether the machine had cores to spare when the work was set up (see above).
    may_yield: bool,
    foreground_done: std::sync::atomic::AtomicBool,
}

impl Beside {
    /// Asks the machine, before the foreground starts, whether it has cores to spare (a few
    /// milliseconds: `cores_to_spare`).
    pub fn for_this_machine() -> Beside {
        Beside::with_yielding(cores_to_spare())
    }

    fn with_yielding(may_yield: bool) -> Beside {
        Beside {
            yielding: std::sync::OnceLock::new(),
            may_yield,
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
        let pool = self
            .yielding
            .get_or_init(|| self.may_yield.then(yielding_pool).flatten());
        match pool {
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

/// `work` as a stage beside the foreground where there is such work, else here.
pub fn stage<T: Send>(beside: Option<&Beside>, work: impl FnOnce() -> T + Send) -> T {
    match beside {
        Some(beside) => beside.stage(work),
        None => work(),
    }
}

/// Whether fewer other threads are runnable than there are cores. The least of three looks
/// a few milliseconds apart: a process that has just exited leaves kernel threads runnable
/// for a moment (a back-to-back run saw one to three).
fn cores_to_spare() -> bool {
    // Elsewhere there are no yielding threads to choose (`yielding_pool`).
    if !cfg!(target_os = "linux") {
        return false;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut others: Option<usize> = None;
    for look in 0..3 {
        if look > 0 {
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let now = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|text| others_runnable(&text));
        others = match (others, now) {
            (Some(before), Some(now)) => Some(before.min(now)),
            (before, now) => before.or(now),
        };
    }
    let spare = others.is_some_and(|others| others < cores);
    if std::env::var_os("GATEFIX_TIMINGS").is_some() {
        eprintln!(
            "beside: {others:?} other threads runnable, {cores} cores: yielding threads {spare}"
        );
    }
    spare
}

/// How many threads other than the caller are runnable on the machine now: the first number
/// of `/proc/loadavg`'s fourth field (`runnable/total`, Linux), which counts the caller.
fn others_runnable(loadavg: &str) -> Option<usize> {
    let (runnable, _) = loadavg.split_whitespace().nth(3)?.split_once('/')?;
    Some(runnable.parse::<usize>().ok()?.saturating_sub(1))
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

/// Runs `work` (a parallel walk over the site's files) with more reads in flight than the
/// machine has cores. A file the page cache no longer holds (a reboot, a fresh install, a
/// memory manager that paged it out) costs a wait on the disk, not CPU, and a thread per core
/// leaves the cores idle while each waits: on a 2-core VM with the files paged out, reading
/// sglang 0.5.23 + flashinfer 0.7.2's 8,097 Python files took 0.43-0.48 s with 2 threads and
/// 0.21-0.25 s with 8-16. With the files cached the threads only take turns on the cores.
/// The pool is made once per process; where it cannot be made the work runs here.
pub fn with_reads_in_flight<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads((rayon::current_num_threads() * 4).clamp(4, 16))
            .thread_name(|i| format!("gatefix-read-{i}"))
            .build()
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
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
    fn reads_in_flight_run_on_more_threads_than_cores() {
        let (name, threads) = with_reads_in_flight(|| {
            (
                std::thread::current().name().map(String::from),
                rayon::current_num_threads(),
            )
        });
        assert!(name.is_some_and(|n| n.starts_with("gatefix-read-")));
        // Four per thread of the shared pool (one per core), at least 4 and at most 16.
        let shared = rayon::current_num_threads();
        assert!((4..=16).contains(&threads));
        assert!(
            threads > shared || threads == 16,
            "{threads} read threads, {shared} shared"
        );
        // A parallel walk inside it returns its items in order.
        use rayon::prelude::*;
        let doubled: Vec<u32> =
            with_reads_in_flight(|| (0..1000u32).into_par_iter().map(|i| i * 2).collect());
        assert_eq!(doubled, (0..1000u32).map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_stage_yields_while_the_foreground_runs_and_not_after() {
        let beside = Beside::with_yielding(true);
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
    #[cfg(target_os = "linux")]
    fn on_a_busy_machine_a_stage_shares_the_foreground_threads() {
        let beside = Beside::with_yielding(false);
        let caller = own_nice();
        let (thread, nice) = beside.stage(|| (std::thread::current().id(), own_nice()));
        assert_eq!(thread, std::thread::current().id());
        assert_eq!(nice, caller);
    }

    #[test]
    fn the_other_runnable_threads_are_read_from_loadavg() {
        assert_eq!(others_runnable("0.50 0.40 0.30 1/109 12426\n"), Some(0));
        assert_eq!(others_runnable("1.87 1.67 1.50 4/125 11784\n"), Some(3));
        assert_eq!(others_runnable("1.87 1.67 1.50 0/125 11784"), Some(0));
        assert_eq!(others_runnable("1.87 1.67 1.50"), None);
        assert_eq!(others_runnable("1.87 1.67 1.50 x/125 1"), None);
        assert_eq!(others_runnable(""), None);
    }

    #[test]
    fn a_stage_gives_back_what_its_work_gives() {
        let beside = Beside::with_yielding(true);
        let sum: u64 = beside.stage(|| {
            use rayon::prelude::*;
            (1..=1000u64).into_par_iter().sum()
        });
        assert_eq!(sum, 500_500);
        beside.foreground_done();
        assert_eq!(beside.stage(|| "after"), "after");
    }
}
