//! What the loom models of `maple-poll` share: the explorer (bounds, execution count, time) and the
//! knob guard of the broken twins.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use maple_poll::loom_knobs;

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
    let mut b = loom::model::Builder::new();
    b.max_branches = 100_000;
    b.preemption_bound = Some(b.preemption_bound.unwrap_or(DEFAULT_PREEMPTIONS));
    EXECUTIONS.store(0, Ordering::Relaxed);
    let t = Instant::now();
    b.check(f);
    let n = EXECUTIONS.load(Ordering::Relaxed);
    let d = t.elapsed();
    eprintln!("    {name}: {n} executions, {d:.2?}");
    (n, d)
}

/// Set in the child process that [`explore_twin_deadlock`] runs a twin in.
const CHILD_ENV: &str = "MAPLE_POLL_LOOM_TWIN_CHILD";

/// Runs a broken twin in a child process. When loom reports a failure (a deadlock, a causality
/// violation) it unwinds while the model's threads still hold crossbeam-epoch's thread-local
/// handles and collector, the tree's guards and the crate's locks; their destructors then run
/// outside the model and abort the process. So the parent re-runs this test binary on `test`
/// alone with [`CHILD_ENV`] set, and the child turns the knob `set` on and explores `f`. The
/// child must fail, and its output must contain one of `expect`; returns the child's output.
pub fn explore_twin<F>(name: &str, test: &str, expect: &[&str], set: fn(bool), f: F) -> String
where
    F: Fn() + Sync + Send + 'static,
{
    if std::env::var_os(CHILD_ENV).is_some() {
        let _k = Knob::on(set);
        let t = Instant::now();
        let label = name.to_string();
        let hook = std::panic::take_hook();
        let first = std::sync::atomic::AtomicBool::new(true);
        std::panic::set_hook(Box::new(move |info| {
            if !first.swap(false, Ordering::Relaxed) {
                return hook(info);
            }
            eprintln!(
                "    {label} (broken twin): caught in execution {} after {:.2?}",
                EXECUTIONS.load(Ordering::Relaxed),
                t.elapsed()
            );
            hook(info);
        }));
        let (n, _) = explore(name, f);
        return format!("the broken twin {name} passed {n} executions");
    }
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the twin in a child process");
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "the broken twin {name} passed: the model cannot fail\n{text}"
    );
    let expected = |l: &str| expect.iter().any(|e| l.contains(e));
    for line in text
        .lines()
        .filter(|l| l.contains("broken twin") || expected(l))
    {
        eprintln!("{line}");
    }
    assert!(expected(&text), "unexpected failure of {name}: {text}");
    text
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
/// loom atomic or lock (a file reference, an epoch guard, the descriptor table, a `Task`) would
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

impl<T> std::ops::DerefMut for Defuse<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
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
