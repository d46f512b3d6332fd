//! What the loom models of `maple-mm` share: the explorer (bounds, execution count, time) and the
//! knob guard of the broken twins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use maple_mm::loom_knobs;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is not set.
pub const DEFAULT_PREEMPTIONS: usize = 3;

static EXECUTIONS: AtomicUsize = AtomicUsize::new(0);

/// Counts one execution (call at the start of the model's closure).
pub fn count_execution() {
    EXECUTIONS.fetch_add(1, Ordering::Relaxed);
}

/// Explores `f` under loom with the environment's bounds (`LOOM_MAX_PREEMPTIONS`, default
/// [`DEFAULT_PREEMPTIONS`]); returns the executions and the time, and prints them.
pub fn explore<F>(name: &str, f: F) -> (usize, Duration)
where
    F: Fn() + Sync + Send + 'static,
{
    explore_capped(name, usize::MAX, f)
}

/// [`explore`] with the preemption bound capped at `cap` (for the larger models).
pub fn explore_capped<F>(name: &str, cap: usize, f: F) -> (usize, Duration)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut b = loom::model::Builder::new();
    b.max_branches = 100_000;
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(DEFAULT_PREEMPTIONS).min(cap));
    EXECUTIONS.store(0, Ordering::Relaxed);
    let t = Instant::now();
    b.check(f);
    let n = EXECUTIONS.load(Ordering::Relaxed);
    let d = t.elapsed();
    eprintln!("    {name}: {n} executions, {d:.2?}");
    (n, d)
}

/// Runs a broken twin: `set` turns its knob on, `f` is the model. The exploration must fail;
/// returns loom's (or the model's) failure message.
pub fn explore_twin<F>(name: &str, set: fn(bool), f: F) -> String
where
    F: Fn() + Sync + Send + 'static,
{
    explore_twin_capped(name, usize::MAX, set, f)
}

/// [`explore_twin`] with the preemption bound capped at `cap`.
pub fn explore_twin_capped<F>(name: &str, cap: usize, set: fn(bool), f: F) -> String
where
    F: Fn() + Sync + Send + 'static,
{
    let _k = Knob::on(set);
    let t = Instant::now();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        explore_capped(name, cap, f)
    }));
    let msg = match r {
        Ok((n, _)) => panic!("the broken twin {name} passed {n} executions: the model cannot fail"),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    };
    eprintln!(
        "    {name} (broken twin): caught in execution {} after {:.2?}: {}",
        EXECUTIONS.load(Ordering::Relaxed),
        t.elapsed(),
        msg.lines().next().unwrap_or("")
    );
    msg
}

/// The knobs are process-wide and the harness runs tests on parallel threads: every model holds
/// this lock, and a twin's knob is on only while it holds it.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Holds [`ONE_AT_A_TIME`]; turns the knobs off when dropped (also when the model panicked).
pub struct Knob(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Knob {
    /// No knob on (for the sound models).
    pub fn none() -> Knob {
        let g = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loom_knobs::reset();
        Knob(g)
    }

    /// The knob `set` on.
    pub fn on(set: fn(bool)) -> Knob {
        let k = Knob::none();
        set(true);
        k
    }
}

impl Drop for Knob {
    fn drop(&mut self) {
        loom_knobs::reset();
    }
}

/// Holds a value that contains loom objects and drops it only when the thread is not panicking:
/// after loom reports a failure its execution state is gone, and a destructor that touches a
/// loom atomic or lock (an mmap write guard, a VMA read guard, an epoch guard, the `Mm`) would
/// panic again and abort the process. On a failure the value is leaked.
pub struct Defuse<T>(std::mem::ManuallyDrop<T>);

impl<T> Defuse<T> {
    /// Wraps `v`.
    pub fn new(v: T) -> Self {
        Defuse(std::mem::ManuallyDrop::new(v))
    }
}

impl<T> std::ops::Deref for Defuse<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Drop for Defuse<T> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // SAFETY: dropped once, here; the field is never used again.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.0) };
        }
    }
}
