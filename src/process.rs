//! What gatefix asks of the operating system for its own process.

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
