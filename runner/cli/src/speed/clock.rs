//! CPU time of the calling thread: on a machine shared with other work, wall
//! time measures the neighbours as much as icrun, CPU time does not.

use std::time::{Duration, Instant};

/// A point in time on the thread's CPU clock (wall clock where there is none).
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch {
    cpu: Option<Duration>,
    wall: Instant,
}

impl Stopwatch {
    /// Starts measuring.
    pub fn start() -> Stopwatch {
        Stopwatch {
            cpu: thread_cpu(),
            wall: Instant::now(),
        }
    }

    /// CPU time of this thread since `start` (wall time without a CPU clock).
    pub fn elapsed(&self) -> Duration {
        match (self.cpu, thread_cpu()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => self.wall.elapsed(),
        }
    }
}

#[cfg(unix)]
fn thread_cpu() -> Option<Duration> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) } == 0;
    ok.then(|| Duration::new(time.tv_sec as u64, time.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu() -> Option<Duration> {
    None
}
