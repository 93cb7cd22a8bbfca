//! Keeping the sidecar's memory near idle after a burst of requests. glibc's
//! allocator gives each thread that allocates its own arena and keeps freed
//! pages in them: after a flood of git work on the blocking pool the
//! resident size stayed at four times the idle one. The arenas are limited,
//! and freed memory is handed back whenever the last git work ends.

use std::sync::atomic::{AtomicUsize, Ordering};

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Limits the allocator to two arenas (once, before any thread starts).
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before the
    // runtime starts its threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Runs git work `f`; when it is the last one running, the memory the
/// allocator holds free goes back to the system.
pub fn tracked<T>(f: impl FnOnce() -> T) -> T {
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let out = f();
    if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free pages to the kernel.
        unsafe {
            libc::malloc_trim(0);
        }
    }
    out
}

/// Lowers the calling thread's CPU priority (nice 10) for git work; answers
/// from the cache then run first. Failure leaves the priority as it was.
pub fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority only read and set this thread's nice
    // value; on Linux a thread id names one thread to PRIO_PROCESS.
    unsafe {
        let tid = libc::gettid();
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) != 0 {
            tracing::debug!(
                "cannot lower the git thread's priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}
