//! Target `uffd_ops`: userfaultfd contexts on the VMA manager — `UFFDIO_REGISTER`,
//! `UFFDIO_UNREGISTER`, closing the fd, and fork with and without `UFFD_FEATURE_EVENT_FORK`
//! (the monitor reading the FORK event or closing its fd first) — against the page model of
//! [`page_model`](super::page_model), which records a context id per page.
//!
//! Three contexts; whether each has `EVENT_FORK` comes from the input. The model decides every
//! error code (`EINVAL` for holes-only ranges, unregistrable VMAs and foreign contexts on
//! unregister, `EBUSY` for foreign contexts on register, `ENOMEM` at `max_map_count`) and the
//! split/merge result (VMAs are the maximal runs of equal flags, backing, offset and context).
//! Fork outcomes per parent VMA: no context — identical copy; a context without `EVENT_FORK` —
//! the child loses it and its uffd flags; `EVENT_FORK` — one new context per parent context,
//! flags kept, and the fork returns only after the monitor read the event; if the monitor
//! closes its fd instead, the child's VMAs are reset and the parent loses that context
//! everywhere. The hook's counters are checked against the early-return switch.
//!
//! The whole input runs twice, with the early return ("seed patch") of `dup_userfaultfd` off and
//! on: both runs must give the same observable trace (every VMA with its flags and context,
//! normalised to the order contexts first appear, after every step, and every child).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use maple_mm::uffd::{feature, CostSetting, DupUffd, UffdCtx, UffdMsg};
use maple_mm::{DupMode, MmConfig, MmError, VmFlags, VmaSnapshot, PAGE_SHIFT};

use super::page_model::{check, check_with, files, Model, Op, Src, World, UFFD_BITS, WINDOW};

/// Operations decoded from one input at most.
const MAX_UFFD_OPS: usize = 96;
/// Contexts per run.
const NCTX: usize = 3;

/// Per-run choices.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Cfg {
    /// Bit `i`: context `i` has `EVENT_FORK`.
    pub event_fork: u8,
    /// `max_map_count`: 0 (mod 4) the default, else `2 + max % 8`.
    pub max: u8,
}

/// One step.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum In {
    /// Fixed mmap: `kind` 0..=3 anonymous, 4 shared anonymous (shmem), else a private file
    /// (cannot be registered).
    Map { page: u8, n: u8, prot: u8, kind: u8 },
    /// munmap.
    Unmap { page: u8, n: u8 },
    /// mprotect (splits and merges registered VMAs too).
    Protect { page: u8, n: u8, prot: u8 },
    /// `UFFDIO_REGISTER` with `mode` 1..=7 on context `which % 3`.
    Register {
        page: u8,
        n: u8,
        mode: u8,
        which: u8,
    },
    /// `UFFDIO_UNREGISTER`.
    Unregister { page: u8, n: u8, which: u8 },
    /// Closing context `which % 3`'s fd (a fresh context with the same features takes its slot).
    Release { which: u8 },
    /// fork: `dup` or append; `close` bit `i`: the monitor of context `i` closes its fd
    /// instead of reading the FORK event; `keep_child`: continue with the child where the
    /// child's VMAs are still maximal (the parent exits).
    Fork {
        dup: bool,
        close: u8,
        keep_child: bool,
    },
}

fn pg(p: u8) -> u64 {
    u64::from(p) % WINDOW
}

fn cnt(n: u8) -> u64 {
    1 + u64::from(n) % 9
}

/// Decodes the configuration and up to [`MAX_UFFD_OPS`] steps.
pub fn decode(data: &[u8]) -> Option<(Cfg, Vec<In>)> {
    let mut u = Unstructured::new(data);
    let cfg = Cfg::arbitrary(&mut u).ok()?;
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_UFFD_OPS {
        match In::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    Some((cfg, ops))
}

/// The decoded input.
pub fn describe(data: &[u8]) -> String {
    format!("{:#?}", decode(data))
}

/// Runs one input with the early return off and on and compares the traces.
pub fn run(data: &[u8]) {
    let Some((cfg, ops)) = decode(data) else {
        return;
    };
    let off = run_with(&cfg, &ops, false);
    let on = run_with(&cfg, &ops, true);
    assert_eq!(off.len(), on.len());
    for (i, (a, b)) in off.iter().zip(&on).enumerate() {
        assert_eq!(a, b, "early return changes step {i} ({:?})", ops.get(i));
    }
}

/// One observable state: per VMA `(start page, end page, flags, context label)`.
type Shot = Vec<(u64, u64, u64, usize)>;

struct Labels(BTreeMap<u64, usize>);

impl Labels {
    fn shot(&mut self, vmas: &[VmaSnapshot]) -> Shot {
        vmas.iter()
            .map(|v| {
                let label = match &v.desc.uffd {
                    None => 0,
                    Some(c) => {
                        let n = self.0.len() + 1;
                        *self.0.entry(c.id()).or_insert(n)
                    }
                };
                (
                    v.start >> PAGE_SHIFT,
                    v.end >> PAGE_SHIFT,
                    v.desc.flags.bits(),
                    label,
                )
            })
            .collect()
    }
}

fn features(cfg: &Cfg, i: usize) -> u64 {
    let mut f = feature::SIGBUS;
    if cfg.event_fork & (1 << i) != 0 {
        f |= feature::EVENT_FORK;
    }
    f
}

fn run_with(cfg: &Cfg, ops: &[In], seed: bool) -> Vec<Shot> {
    let mut mc = MmConfig::default();
    if cfg.max % 4 != 0 {
        mc.max_map_count = 2 + usize::from(cfg.max % 8);
    }
    let mut w = World::with_config(mc, files());
    w.ctxs = (0..NCTX)
        .map(|i| UffdCtx::with_features(&w.mm, features(cfg, i)))
        .collect();
    let mut labels = Labels(BTreeMap::new());
    let mut trace = Vec::new();
    for &op in ops {
        match op {
            In::Map {
                page,
                n,
                prot,
                kind,
            } => w.step(&Op::Map {
                page: pg(page),
                n: cnt(n),
                prot: u32::from(prot % 8),
                src: match kind % 6 {
                    0..=3 => Src::Anon,
                    4 => Src::SharedAnon,
                    _ => Src::File {
                        id: 0,
                        off: pg(page),
                        shared: false,
                    },
                },
                noreplace: false,
            }),
            In::Unmap { page, n } => w.step(&Op::Unmap {
                page: pg(page),
                n: cnt(n),
            }),
            In::Protect { page, n, prot } => w.step(&Op::Protect {
                page: pg(page),
                n: cnt(n),
                prot: u32::from(prot % 8),
            }),
            In::Register {
                page,
                n,
                mode,
                which,
            } => w.step(&Op::Register {
                page: pg(page),
                n: cnt(n),
                mode: 1 + u64::from(mode) % 7,
                which: usize::from(which) % NCTX,
            }),
            In::Unregister { page, n, which } => w.step(&Op::Unregister {
                page: pg(page),
                n: cnt(n),
                which: usize::from(which) % NCTX,
            }),
            In::Release { which } => {
                let i = usize::from(which) % NCTX;
                release(&mut w, cfg, i);
            }
            In::Fork {
                dup,
                close,
                keep_child,
            } => {
                let child = fork(&mut w, cfg, seed, dup, close, keep_child);
                trace.push(labels.shot(&child));
            }
        }
        check(&w.mm, &w.model, w.max);
        trace.push(labels.shot(&w.mm.snapshot()));
    }
    trace
}

/// Closes context `i`'s fd: its registrations are cleared (and merged); a fresh context with the
/// same features takes the slot.
fn release(w: &mut World, cfg: &Cfg, i: usize) {
    let fresh = UffdCtx::with_features(&w.mm, features(cfg, i));
    let c = std::mem::replace(&mut w.ctxs[i], fresh);
    c.release(Some(&w.mm));
    clear_ctx(&mut w.model, c.id());
}

fn clear_ctx(m: &mut Model, id: u64) {
    for a in m.pages.values_mut() {
        if a.ctx == id {
            a.flags &= !UFFD_BITS;
            a.ctx = 0;
        }
    }
}

/// Forks, checks the child and the parent, maybe continues with the child; returns the child's
/// VMAs.
fn fork(
    w: &mut World,
    cfg: &Cfg,
    seed: bool,
    dup: bool,
    close: u8,
    keep_child: bool,
) -> Vec<VmaSnapshot> {
    let parent_vmas = w.mm.snapshot();
    // Parent contexts in the order the fork meets them, and what each monitor does.
    let mut met: Vec<usize> = Vec::new();
    for v in &parent_vmas {
        if let Some(c) = &v.desc.uffd {
            let i = w
                .ctxs
                .iter()
                .position(|x| Arc::ptr_eq(x, c))
                .expect("a VMA holds a context of this world");
            if !met.contains(&i) {
                met.push(i);
            }
        }
    }
    let evf = |i: usize| features(cfg, i) & feature::EVENT_FORK != 0;
    let closing: BTreeSet<usize> = met
        .iter()
        .copied()
        .filter(|&i| evf(i) && close & (1 << i) != 0)
        .collect();
    let reading: Vec<usize> = met
        .iter()
        .copied()
        .filter(|&i| evf(i) && !closing.contains(&i))
        .collect();
    let mode = if dup { DupMode::Dup } else { DupMode::Append };
    let mut hook = DupUffd::new(seed, CostSetting::Faithful);
    let ctxs = w.ctxs.clone();
    let mm = &w.mm;
    let (child, msgs) = std::thread::scope(|s| {
        let monitor = (!reading.is_empty() || !closing.is_empty()).then(|| {
            let ctxs = &ctxs;
            let (reading, closing) = (&reading, &closing);
            s.spawn(move || {
                let mut got: BTreeMap<usize, Arc<UffdCtx>> = BTreeMap::new();
                let mut closed = BTreeSet::new();
                while got.len() < reading.len() || closed.len() < closing.len() {
                    for &i in closing {
                        if !closed.contains(&i) && ctxs[i].mmap_changing() > 0 {
                            ctxs[i].release(Some(mm));
                            closed.insert(i);
                        }
                    }
                    for &i in reading {
                        if got.contains_key(&i) {
                            continue;
                        }
                        match ctxs[i].read(true) {
                            Ok(UffdMsg::Fork { ctx }) => {
                                got.insert(i, ctx);
                            }
                            Ok(m) => panic!("unexpected message {m:?}"),
                            Err(MmError::Again) => {}
                            Err(e) => panic!("read: {e:?}"),
                        }
                    }
                    std::thread::yield_now();
                }
                got
            })
        });
        let child = mm.fork_with(mode, &mut hook).expect("fork");
        let msgs = monitor
            .map(|m| m.join().expect("monitor"))
            .unwrap_or_default();
        (child, msgs)
    });
    // The hook's counters: the early return skips the VMAs without a context.
    let mut resets = 0;
    for v in &parent_vmas {
        match &v.desc.uffd {
            None if !seed => resets += 1,
            None => {}
            Some(c) if !c.features() & feature::EVENT_FORK != 0 => resets += 1,
            Some(_) => {}
        }
    }
    let counters = hook.counters();
    assert_eq!(
        counters.dup_uffd_start_write_calls, resets,
        "start_write calls"
    );
    assert_eq!(counters.uffd_flag_writes, resets, "flag writes");
    let evf_met = met.iter().filter(|&&i| evf(i)).count() as u64;
    assert_eq!(counters.child_contexts, evf_met, "child contexts");
    assert_eq!(hook.delivered(), reading.len() as u64, "FORK events read");
    for &i in &reading {
        assert_eq!(
            msgs[&i].mm_id(),
            child.id(),
            "child context bound to the child"
        );
        assert_eq!(msgs[&i].features(), w.ctxs[i].features());
    }
    // The child model.
    let mut cm = w.model.clone();
    let id_of = |i: usize| w.ctxs[i].id();
    for a in cm.pages.values_mut() {
        if a.ctx == 0 {
            continue;
        }
        let i = (0..NCTX)
            .find(|&i| id_of(i) == a.ctx)
            .expect("known context");
        match msgs.get(&i) {
            Some(c) => a.ctx = c.id(),
            None => {
                a.flags &= !UFFD_BITS;
                a.ctx = 0;
            }
        }
    }
    cm.data.clear();
    check_with(&child, &cm, usize::MAX, false);
    let child_vmas = child.snapshot();
    if closing.is_empty() {
        // Fork never merges: the child's VMAs are the parent's, one for one.
        assert_eq!(parent_vmas.len(), child_vmas.len());
        for (a, b) in parent_vmas.iter().zip(&child_vmas) {
            assert_eq!((a.start, a.end), (b.start, b.end));
            let keep = a
                .desc
                .uffd
                .as_ref()
                .is_some_and(|c| c.features() & feature::EVENT_FORK != 0);
            let want = if keep {
                a.desc.flags
            } else {
                a.desc.flags.without(VmFlags::UFFD_FLAGS)
            };
            assert_eq!(b.desc.flags, want);
        }
    }
    // The parent: contexts whose monitor closed are gone everywhere.
    for &i in &closing {
        let id = w.ctxs[i].id();
        clear_ctx(&mut w.model, id);
        w.ctxs[i] = UffdCtx::with_features(&w.mm, features(cfg, i));
        assert!(ctxs[i].is_released());
    }
    check(&w.mm, &w.model, w.max);
    // Continue with the child only where its VMAs are still the maximal runs of its model.
    let maximal = child.map_count() == cm.runs();
    if keep_child && maximal && child.map_count() <= w.max {
        let parent = std::mem::replace(&mut w.mm, child);
        let runs = w.model.runs();
        w.model = cm;
        let mut next: Vec<Arc<UffdCtx>> = Vec::new();
        for i in 0..NCTX {
            next.push(match msgs.get(&i) {
                Some(c) => Arc::clone(c),
                None => UffdCtx::with_features(&w.mm, features(cfg, i)),
            });
        }
        // The parent's contexts go with the parent.
        for c in std::mem::replace(&mut w.ctxs, next) {
            c.release(None);
        }
        assert_eq!(parent.exit(), runs, "exit of the parent");
    } else {
        let count = child.map_count();
        assert_eq!(child.exit(), count, "exit of the child");
    }
    child_vmas
}
