//! will-it-scale's `poll1` and `poll2` (its `tests/poll1.c`, `tests/poll2.c`), run against the model's `do_sys_poll`.
//!
//! Each task (a thread, as `poll2_threads`) opens its regular files (1 or 128, like `mkstemp` +
//! `unlink`), waits for the start signal, then loops: refill its `pollfd` array in user memory
//! (every entry: the fd, `POLLOUT`, `revents` 0), call `poll(pfd, n, 0)`, count one iteration.
//! The parent lets it warm up, then takes samples of the summed iteration counters and reports
//! calls per second summed over the tasks.

use crate::sync::bench::{Arc, AtomicBool, AtomicU64, Barrier, Mutex, Ordering};
use std::time::{Duration, Instant};

use super::{
    CopyOut, Enforcement, Errno, FdTable, PollFd, Task, UaccessStats, UserMemory, WindowMode,
    POLLOUT,
};

/// Which will-it-scale test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Testcase {
    /// `poll1`: "poll of 1 fd" (the control: every strategy opens 2 windows).
    Poll1,
    /// `poll2`: "poll of 128 fds".
    Poll2,
}

impl Testcase {
    /// `NR_FILES`.
    pub const fn nr_files(self) -> usize {
        match self {
            Testcase::Poll1 => 1,
            Testcase::Poll2 => 128,
        }
    }

    /// will-it-scale's `testcase_description`.
    pub const fn description(self) -> &'static str {
        match self {
            Testcase::Poll1 => "poll of 1 fd",
            Testcase::Poll2 => "poll of 128 fds",
        }
    }
}

/// A run's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// poll1 or poll2.
    pub testcase: Testcase,
    /// `-t`: tasks (threads), 1 to [`MAX_TASKS`].
    pub tasks: usize,
    /// Warm-up before the first sample (will-it-scale: 5 one-second samples).
    pub warmup: Duration,
    /// `-s`: samples taken.
    pub samples: usize,
    /// Length of one sample (will-it-scale: 1 s).
    pub sample_period: Duration,
    /// The copy-out strategy.
    pub copy_out: CopyOut,
    /// How user-access windows are realised.
    pub window: WindowMode,
}

impl Config {
    /// `poll2_threads -t 1 -s 15` with `copy_out` and the default (SMAP-calibrated) window model.
    pub fn new(testcase: Testcase, copy_out: CopyOut) -> Self {
        Config {
            testcase,
            tasks: 1,
            warmup: Duration::from_secs(5),
            samples: 15,
            sample_period: Duration::from_secs(1),
            copy_out,
            window: WindowMode::default(),
        }
    }

    /// The same run squeezed into about `total`: a fifth warm-up, four samples of a fifth each.
    pub fn lasting(mut self, total: Duration) -> Self {
        self.warmup = total / 5;
        self.samples = 4;
        self.sample_period = total / 5;
        self
    }
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The test.
    pub testcase: Testcase,
    /// The copy-out strategy.
    pub copy_out: CopyOut,
    /// Tasks run.
    pub tasks: usize,
    /// How windows were realised (protection keys or the model, and why).
    pub enforcement: Enforcement,
    /// Calls per second summed over the tasks, one per sample.
    pub samples: Vec<f64>,
    /// The mean of `samples` (will-it-scale's `average:`).
    pub ops_per_sec: f64,
    /// `poll` calls made in the whole run (warm-up included).
    pub calls: u64,
    /// Copy-in windows per call.
    pub read_windows_per_call: f64,
    /// Copy-out windows per call.
    pub write_windows_per_call: f64,
    /// Bytes written to user memory per call.
    pub bytes_out_per_call: f64,
}

/// will-it-scale's `-t` limit.
pub const MAX_TASKS: usize = 1024;

#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

/// Runs one will-it-scale test. `EINVAL` for 0 or more than 1024 tasks (will-it-scale's
/// limit), zero samples or a zero sample period;
/// any error of a task's `poll` (which will-it-scale would `assert`) is returned.
///
/// ```
/// use maple_poll::will_it_scale::{run, Config, Testcase};
/// use maple_poll::{CopyOut, WindowMode};
/// use std::time::Duration;
///
/// let mut cfg = Config::new(Testcase::Poll2, CopyOut::PerFdPutUser).lasting(Duration::from_millis(50));
/// cfg.window = WindowMode::Counted;
/// let r = run(&cfg).unwrap();
/// assert!(r.ops_per_sec > 0.0);
/// assert_eq!((r.read_windows_per_call, r.write_windows_per_call), (2.0, 128.0));
/// ```
pub fn run(cfg: &Config) -> Result<Report, Errno> {
    if cfg.tasks == 0 || cfg.tasks > MAX_TASKS || cfg.samples == 0 || cfg.sample_period.is_zero() {
        return Err(Errno::EINVAL);
    }
    let nr = cfg.testcase.nr_files();
    let files = Arc::new(FdTable::new());
    // testcase_prepare: room for (NR_FILES + 10) descriptors per CPU (here: per task at least).
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let want = ((nr + 10) * cfg.tasks.max(cpus)) as u64;
    if want > files.rlimit_nofile() {
        files.set_rlimit_nofile(want)?;
    }
    // One page of user memory per task for its pollfd array (1 KiB for poll2).
    let mm = Arc::new(UserMemory::new(cfg.tasks * 4096, cfg.window)?);
    let counters: Vec<Counter> = (0..cfg.tasks).map(|_| Counter::default()).collect();
    let stop = AtomicBool::new(false);
    let start = Barrier::new(cfg.tasks + 1);
    let error: Mutex<Option<Errno>> = Mutex::new(None);
    let totals: Mutex<(UaccessStats, u64)> = Mutex::new((UaccessStats::default(), 0));

    let samples = std::thread::scope(|s| {
        for (t, counter) in counters.iter().enumerate() {
            let (files, mm, stop, start, error, totals) =
                (&files, &mm, &stop, &start, &error, &totals);
            s.spawn(move || {
                let mut task = Task::new(Arc::clone(files), Arc::clone(mm));
                task.set_copy_out(cfg.copy_out);
                let ufds = mm.base() + t as u64 * 4096;
                let mut tmpfiles = [0i32; 128];
                let mut setup = Ok(());
                for slot in tmpfiles.iter_mut().take(nr) {
                    match files.open_regular() {
                        Ok(fd) => *slot = fd,
                        Err(e) => {
                            setup = Err(e);
                            break;
                        }
                    }
                }
                if let Err(e) = setup {
                    *error.lock() = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    // memset(pfd, 0, sizeof(pfd)); then fd and POLLOUT for each entry.
                    let mut pfd = [PollFd::default(); 128];
                    for (p, fd) in pfd.iter_mut().zip(&tmpfiles).take(nr) {
                        p.fd = *fd;
                        p.events = POLLOUT;
                    }
                    let r = mm
                        .write_pollfds(ufds, &pfd[..nr])
                        .and_then(|()| task.sys_poll(ufds, nr as u64, 0));
                    if let Err(e) = r {
                        *error.lock() = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    counter
                        .0
                        .store(counter.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                }
                let mut tot = totals.lock();
                tot.0 += task.stats();
                tot.1 += task.calls().0;
            });
        }
        start.wait();
        let sum = || {
            counters
                .iter()
                .map(|c| c.0.load(Ordering::Relaxed))
                .sum::<u64>()
        };
        std::thread::sleep(cfg.warmup);
        let mut samples = Vec::with_capacity(cfg.samples);
        let mut prev = sum();
        let mut t0 = Instant::now();
        for _ in 0..cfg.samples {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(cfg.sample_period);
            let now = sum();
            let t1 = Instant::now();
            samples.push((now - prev) as f64 / (t1 - t0).as_secs_f64());
            prev = now;
            t0 = t1;
        }
        stop.store(true, Ordering::Relaxed);
        samples
    });

    if let Some(e) = *error.lock() {
        return Err(e);
    }
    let (stats, calls) = *totals.lock();
    let per = |x: u64| {
        if calls == 0 {
            0.0
        } else {
            x as f64 / calls as f64
        }
    };
    let ops_per_sec = if samples.is_empty() {
        0.0
    } else {
        samples.iter().sum::<f64>() / samples.len() as f64
    };
    Ok(Report {
        testcase: cfg.testcase,
        copy_out: cfg.copy_out,
        tasks: cfg.tasks,
        enforcement: mm.enforcement().clone(),
        samples,
        ops_per_sec,
        calls,
        read_windows_per_call: per(stats.read_windows),
        write_windows_per_call: per(stats.write_windows),
        bytes_out_per_call: per(stats.bytes_out),
    })
}

/// The seed-002 comparison for the crate's demo: `testcase` with every copy-out strategy (oldest
/// first), one task, windows realised by `window`, about `per_strategy` of running time each.
/// The time is split into three rounds that alternate the strategies (so that drift on a shared
/// machine hits them alike); each strategy's report is its median round. Compare `ops_per_sec`
/// with the first row (per-descriptor windows) for the speed-up.
///
/// ```
/// use maple_poll::will_it_scale::{compare_strategies, Testcase};
/// use maple_poll::WindowMode;
/// use std::time::Duration;
///
/// let rows = compare_strategies(Testcase::Poll1, Duration::from_millis(30), WindowMode::Counted).unwrap();
/// assert_eq!(rows.len(), 4);
/// assert!(rows.iter().all(|r| r.read_windows_per_call + r.write_windows_per_call == 2.0));
/// ```
pub fn compare_strategies(
    testcase: Testcase,
    per_strategy: Duration,
    window: WindowMode,
) -> Result<Vec<Report>, Errno> {
    const ROUNDS: usize = 3;
    let mut runs: Vec<Vec<Report>> = vec![Vec::with_capacity(ROUNDS); CopyOut::ALL.len()];
    for _ in 0..ROUNDS {
        for (i, &s) in CopyOut::ALL.iter().enumerate() {
            let mut cfg = Config::new(testcase, s).lasting(per_strategy / ROUNDS as u32);
            cfg.window = window;
            runs[i].push(run(&cfg)?);
        }
    }
    Ok(runs
        .into_iter()
        .map(|mut r| {
            r.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
            r.swap_remove(ROUNDS / 2)
        })
        .collect())
}

/// The cost of one `poll` call (refill included) with one copy-out strategy.
#[derive(Clone, Debug, PartialEq)]
pub struct CallCost {
    /// The copy-out strategy.
    pub copy_out: CopyOut,
    /// Nanoseconds per call: the best batch.
    pub ns_per_call: f64,
    /// Copy-in windows per call.
    pub read_windows_per_call: f64,
    /// Copy-out windows per call.
    pub write_windows_per_call: f64,
    /// Bytes written to user memory per call.
    pub bytes_out_per_call: f64,
}

/// The same loop as [`run`] (refill, `poll(pfd, n, 0)`), one task per strategy on one thread,
/// timed as the best of many short batches of 100 calls that alternate the strategies until
/// `budget` is spent (at least 5 rounds). On a shared machine this is the stable figure: other
/// load only ever makes a batch slower. Returns the four strategies, oldest first; the speed-up
/// of strategy `i` over per-descriptor windows is `costs[0].ns_per_call / costs[i].ns_per_call`.
///
/// ```
/// use maple_poll::will_it_scale::{per_call_costs, Testcase};
/// use maple_poll::WindowMode;
/// use std::time::Duration;
///
/// let c = per_call_costs(Testcase::Poll2, WindowMode::Counted, Duration::from_millis(20)).unwrap();
/// assert_eq!(c.iter().map(|c| c.write_windows_per_call).collect::<Vec<_>>(), [128.0, 2.0, 2.0, 1.0]);
/// assert!(c.iter().all(|c| c.ns_per_call > 0.0));
/// ```
pub fn per_call_costs(
    testcase: Testcase,
    window: WindowMode,
    budget: Duration,
) -> Result<Vec<CallCost>, Errno> {
    const BATCH: u32 = 100;
    let nr = testcase.nr_files();
    let mm = Arc::new(UserMemory::new(4096, window)?);
    // One thread: each task has its own table (files->count == 1, as a single-threaded
    // process), so `fdget` borrows; the same descriptors 0..nr in each.
    let mut tasks = Vec::with_capacity(CopyOut::ALL.len());
    let mut pfds = Vec::new();
    for s in CopyOut::ALL {
        let files = FdTable::new();
        pfds = (0..nr)
            .map(|_| files.open_regular().map(|fd| PollFd::new(fd, POLLOUT)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut t = Task::new(Arc::new(files), Arc::clone(&mm));
        t.set_copy_out(s);
        tasks.push(t);
    }
    let mut best = [f64::INFINITY; 4];
    let start = Instant::now();
    let mut rounds = 0;
    while rounds < 5 || start.elapsed() < budget {
        for (task, b) in tasks.iter_mut().zip(best.iter_mut()) {
            let t0 = Instant::now();
            for _ in 0..BATCH {
                mm.write_pollfds(mm.base(), &pfds)?;
                task.sys_poll(mm.base(), nr as u64, 0)?;
            }
            *b = b.min(t0.elapsed().as_nanos() as f64 / f64::from(BATCH));
        }
        rounds += 1;
    }
    Ok(tasks
        .iter()
        .zip(best)
        .map(|(t, ns)| {
            let (calls, _) = t.calls();
            let st = t.stats();
            let per = |x: u64| x as f64 / calls as f64;
            CallCost {
                copy_out: t.copy_out(),
                ns_per_call: ns,
                read_windows_per_call: per(st.read_windows),
                write_windows_per_call: per(st.write_windows),
                bytes_out_per_call: per(st.bytes_out),
            }
        })
        .collect())
}
