//! The kernel oracle's script generator and checker (see `scripts/kernel-oracle.sh`).
//!
//! ```text
//! cargo run --release -p maple-tools --bin kernel_oracle -- gen SEED KIND OPS > script
//! cargo run --release -p maple-tools --bin kernel_oracle -- check SCRIPT KERNEL_OUTPUT \
//!     [SCRIPT KERNEL_OUTPUT ...]
//! ```
//!
//! `gen` writes a random script in the oracle's op language. `KIND` is one of
//! - `small`: plain and allocation trees over a few dozen indices (many collisions);
//! - `wide`: ranges anywhere in the full 64-bit index space, edges included;
//! - `alloc`: allocation trees with heavy alloc/ralloc/cyclic/erase churn and gap searches;
//! - `tall`: a tree of `3 * OPS / 4` ranges (100,000 or more from `OPS = 134000`), in order or
//!   shuffled, then random ops on it;
//! - `cursor`: mostly cursor lines, on small and wide trees;
//! - `quirks`: the cases of the kernel's five documented bugs.
//!
//! Every cursor line has 1 to 12 random steps (every step kind, with limits around the cursor's
//! neighbourhood and at the extremes), so that every status is left by every step.
//!
//! `check` replays each script on this crate, compares with the kernel's output and prints the
//! figures per op family; it exits with status 1 if any difference is not a documented one.

#[path = "../../../../tests/kernel_oracle_support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::process::ExitCode;

const MAX: u64 = u64::MAX;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Space {
    /// Indices in `0..=n`.
    Small(u64),
    /// Anywhere in `0..=MAX`.
    Wide,
}

struct Gen {
    r: Rng,
    out: String,
    ops: u64,
    alloc: bool,
    space: Space,
    /// Indices of interest: range edges written so far.
    pts: Vec<u64>,
    /// Values handed out.
    val: u64,
    /// No `dump` ops (the tree is too big to print).
    no_dump: bool,
}

impl Gen {
    fn new(seed: u64) -> Self {
        Gen {
            r: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            out: String::new(),
            ops: 0,
            alloc: false,
            space: Space::Small(64),
            pts: Vec::new(),
            val: 0,
            no_dump: false,
        }
    }

    fn line(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
        self.ops += 1;
    }

    fn init(&mut self, alloc: bool, space: Space) {
        self.alloc = alloc;
        self.space = space;
        self.pts.clear();
        self.line(&format!("init {}", u8::from(alloc)));
    }

    fn value(&mut self) -> u64 {
        self.val = self.val % 1_000_000 + 1;
        if self.r.chance(30) {
            1 + self.r.below(5)
        } else {
            self.val
        }
    }

    fn remember(&mut self, i: u64) {
        if self.pts.len() < 4096 {
            self.pts.push(i);
        } else {
            let k = self.r.below(self.pts.len() as u64) as usize;
            self.pts[k] = i;
        }
    }

    /// An index of interest: a remembered edge (or next to one), a random one, or an extreme.
    fn idx(&mut self) -> u64 {
        let top = match self.space {
            Space::Small(n) => n,
            Space::Wide => MAX,
        };
        match self.r.below(10) {
            0..=4 if !self.pts.is_empty() => {
                let p = self.pts[self.r.below(self.pts.len() as u64) as usize];
                match self.r.below(4) {
                    0 => p.wrapping_sub(1),
                    1 => p.wrapping_add(1),
                    _ => p,
                }
            }
            5 => [0, 1, top - 1, top][self.r.below(4) as usize],
            6 if self.space == Space::Wide => {
                let b = self.r.below(64);
                (1u64 << b).wrapping_add(self.r.below(3)).wrapping_sub(1)
            }
            7 if self.space == Space::Wide => MAX - self.r.below(40),
            _ => match self.space {
                Space::Small(n) => self.r.below(n + 1),
                Space::Wide => {
                    if self.r.chance(50) {
                        self.r.next()
                    } else {
                        self.r.next() >> self.r.below(64)
                    }
                }
            },
        }
    }

    /// A range `[a, b]`, usually short, sometimes reversed (an error).
    fn range(&mut self) -> (u64, u64) {
        let a = self.idx();
        let len = match self.r.below(10) {
            0..=3 => 0,
            4..=6 => self.r.below(8),
            7 | 8 => match self.space {
                Space::Small(n) => self.r.below(n / 2 + 1),
                Space::Wide => self.r.next() >> self.r.below(64),
            },
            _ => return (a, self.idx()),
        };
        (a, a.saturating_add(len))
    }

    fn size(&mut self) -> u64 {
        match self.r.below(10) {
            0 => 0,
            1..=6 => 1 + self.r.below(4),
            7 | 8 => 1 + self.r.below(64),
            _ => match self.space {
                Space::Small(n) => 1 + self.r.below(n + 2),
                Space::Wide => 1 + (self.r.next() >> self.r.below(64)),
            },
        }
    }

    fn window(&mut self) -> (u64, u64) {
        let (mut a, mut b) = (self.idx(), self.idx());
        if a > b && self.r.chance(90) {
            core::mem::swap(&mut a, &mut b);
        }
        if self.r.chance(15) {
            a = 0;
        }
        if self.r.chance(15) {
            b = match self.space {
                Space::Small(n) if self.r.chance(50) => n,
                _ => MAX,
            };
        }
        (a, b)
    }

    fn store(&mut self) {
        let (a, b) = self.range();
        let v = if self.r.chance(15) { 0 } else { self.value() };
        if a == 0 && b == MAX && self.alloc {
            // A whole-space store on an allocation tree triggers kernel bug 4 for the rest of
            // the script; only the `quirks` kind does that.
            return;
        }
        self.remember(a);
        self.remember(b);
        self.line(&format!("store {a} {b} {v}"));
    }

    fn insert(&mut self) {
        let (a, b) = self.range();
        if a == 0 && b == MAX {
            return; // kernel bug 1; the `quirks` kind covers it
        }
        let v = self.value();
        self.remember(a);
        self.remember(b);
        self.line(&format!("insert {a} {b} {v}"));
    }

    fn alloc_op(&mut self) {
        let size = self.size();
        let (mut lo, mut hi) = self.window();
        let v = self.value();
        match self.r.below(3) {
            0 => self.line(&format!("alloc {size} {lo} {hi} {v}")),
            1 => {
                if hi == MAX && self.r.chance(70) {
                    hi = MAX - 1 - self.r.below(3);
                }
                self.line(&format!("ralloc {size} {lo} {hi} {v}"))
            }
            _ => {
                if self.r.chance(20) {
                    lo = lo.min(hi);
                }
                let next = self.idx();
                self.line(&format!("cyclic {lo} {hi} {next} {v}"))
            }
        }
    }

    fn gap(&mut self) {
        let size = self.size();
        let (lo, hi) = self.window();
        let op = if self.r.chance(50) {
            "gap_lo"
        } else {
            "gap_hi"
        };
        self.line(&format!("{op} {lo} {hi} {size}"));
    }

    fn lo_limit(&mut self) -> u64 {
        match self.r.below(6) {
            0 => 0,
            _ => self.idx(),
        }
    }

    fn hi_limit(&mut self) -> u64 {
        match self.r.below(6) {
            0 => MAX,
            _ => self.idx(),
        }
    }

    fn cursor(&mut self) {
        let mut s = format!("cursor {}", self.idx());
        let n = 1 + self.r.below(12);
        for _ in 0..n {
            let step = match self.r.below(22) {
                0 | 1 => "walk".to_string(),
                2 => "pause".to_string(),
                3 => format!("set:{}", self.idx()),
                4 | 5 => format!("find:{}", self.hi_limit()),
                6 | 7 => format!("find_rev:{}", self.lo_limit()),
                8..=10 => format!("next:{}", self.hi_limit()),
                11..=13 => format!("prev:{}", self.lo_limit()),
                14 | 15 => format!("find_range:{}", self.hi_limit()),
                16 | 17 => format!("find_range_rev:{}", self.lo_limit()),
                18 | 19 => format!("next_range:{}", self.hi_limit()),
                _ => format!("prev_range:{}", self.lo_limit()),
            };
            s.push(' ');
            s.push_str(&step);
        }
        self.line(&s);
    }

    fn read(&mut self) {
        let i = self.idx();
        match self.r.below(6) {
            0 => self.line(&format!("load {i}")),
            1 => {
                let m = self.hi_limit();
                self.line(&format!("find {i} {m}"))
            }
            2 => {
                let m = self.hi_limit();
                self.line(&format!("next {i} {m}"))
            }
            3 => {
                let m = self.lo_limit();
                self.line(&format!("prev {i} {m}"))
            }
            _ => self.line(&format!("walk {i}")),
        }
    }

    /// One random op with the given percentages of writes and cursor lines.
    fn op(&mut self, writes: u64, cursors: u64) {
        let p = self.r.below(100);
        if p < writes {
            match self.r.below(10) {
                0..=4 => self.store(),
                5 | 6 => self.insert(),
                7 if self.alloc => self.alloc_op(),
                8 if self.alloc => self.alloc_op(),
                _ => {
                    let i = self.idx();
                    self.line(&format!("erase {i}"));
                }
            }
        } else if p < writes + cursors {
            self.cursor();
        } else if self.alloc && self.r.chance(25) {
            self.gap();
        } else if self.r.chance(3) {
            if self.no_dump {
                self.line("validate");
                return;
            }
            let op = if self.r.chance(50) {
                "dump"
            } else {
                "validate"
            };
            self.line(op);
        } else {
            self.read();
        }
    }

    fn random_space(&mut self) -> Space {
        if self.r.chance(60) {
            Space::Small([16, 40, 64, 200, 1000][self.r.below(5) as usize])
        } else {
            Space::Wide
        }
    }

    fn kind(&mut self, kind: &str, n: u64) {
        match kind {
            "small" | "wide" | "cursor" => {
                let (writes, cursors) = if kind == "cursor" { (25, 60) } else { (45, 20) };
                while self.ops < n {
                    let alloc = self.r.chance(40);
                    let space = match kind {
                        "small" => Space::Small([8, 16, 40, 64, 200][self.r.below(5) as usize]),
                        "wide" => Space::Wide,
                        _ => self.random_space(),
                    };
                    self.init(alloc, space);
                    let len = 50 + self.r.below(500);
                    for _ in 0..len {
                        self.op(writes, cursors);
                    }
                    self.line("validate");
                    self.line("dump");
                }
            }
            "alloc" => {
                while self.ops < n {
                    let space = if self.r.chance(60) {
                        Space::Small([64, 300, 5000][self.r.below(3) as usize])
                    } else {
                        Space::Wide
                    };
                    self.init(true, space);
                    let len = 200 + self.r.below(2000);
                    for _ in 0..len {
                        match self.r.below(10) {
                            0..=3 => self.alloc_op(),
                            4 | 5 => {
                                let i = self.idx();
                                self.line(&format!("erase {i}"));
                            }
                            6 => self.gap(),
                            7 => self.cursor(),
                            _ => self.op(40, 20),
                        }
                    }
                    self.line("validate");
                    self.line("dump");
                }
            }
            "tall" => {
                let alloc = self.r.chance(50);
                let ranges = (n - n / 4).max(1);
                self.init(alloc, Space::Small(ranges * 10 + 100));
                let mut order: Vec<u64> = (0..ranges).collect();
                if self.r.chance(50) {
                    // Random order: splits everywhere, not just appends.
                    for i in (1..order.len()).rev() {
                        let j = self.r.below(i as u64 + 1) as usize;
                        order.swap(i, j);
                    }
                }
                for i in order {
                    let v = 1 + self.r.below(9);
                    self.line(&format!("store {} {} {v}", i * 10, i * 10 + 5));
                    if i % 97 == 0 {
                        self.remember(i * 10);
                    }
                }
                self.line("validate");
                self.no_dump = true;
                while self.ops < n {
                    self.op(30, 40);
                }
                self.line("validate");
            }
            "quirks" => self.quirks(),
            k => panic!("unknown kind {k:?}"),
        }
    }

    /// The kernel's five documented bugs, each triggered a few ways.
    fn quirks(&mut self) {
        for alloc in [false, true] {
            // 1: insert over everything into a single leaf.
            self.init(alloc, Space::Small(64));
            self.line("store 5 5 5");
            self.line(&format!("insert 0 {MAX} 1"));
            self.line("dump");
            self.line("validate");
            // 2: prev with min > 0 and a lone entry at [0, 0] (the kernel's root entry form).
            self.init(alloc, Space::Small(64));
            self.line("store 0 0 9");
            for (i, min) in [(10, 5), (10, 0), (1, 1), (MAX, 3)] {
                self.line(&format!("prev {i} {min}"));
                self.line(&format!(
                    "cursor {i} prev:{min} find_rev:{min} prev_range:{min}"
                ));
                self.line(&format!("cursor {i} walk prev:{min} find_range_rev:{min}"));
            }
            // The same content kept in a leaf (an entry at 5 stored and erased again): there
            // the kernel's cursor must answer exactly as this crate's.
            for leaf in [false, true] {
                if leaf {
                    self.line("store 5 5 1");
                    self.line("store 5 5 0");
                }
                for i in [0, 1, 7, MAX] {
                    self.line(&format!(
                        "cursor {i} walk next:{MAX} prev:0 find:{MAX} find_rev:0 pause find:{MAX}"
                    ));
                    self.line(&format!(
                        "cursor {i} find_rev:0 find_rev:0 next_range:{MAX} prev_range:0 walk"
                    ));
                    self.line(&format!(
                        "cursor {i} prev:0 next:{MAX} find_range_rev:0 find_range:{MAX} set:0 next_range:{MAX} prev_range:0"
                    ));
                }
            }
            // 5: a limit hit before the cursor walked, then a wider limit.
            self.init(alloc, Space::Small(600));
            for i in 0..50 {
                self.line(&format!("store {} {} {}", i * 10, i * 10 + 5, i + 1));
            }
            for step in [
                "next",
                "next_range",
                "find_rev",
                "find_range_rev",
                "prev",
                "prev_range",
            ] {
                self.line(&format!("cursor 100 next:100 {step}:{MAX}"));
                self.line(&format!("cursor 100 prev:100 {step}:0"));
                self.line(&format!("cursor 103 next:100 {step}:0"));
            }
        }
        // 3: top-down gap search with max = MAX, the fit in the leftmost (here: only) leaf.
        for alloc_first in [false, true] {
            self.init(true, Space::Wide);
            self.line(&format!("store {} {} 2", MAX - 1, MAX - 1));
            self.line(&format!("gap_hi 3 {MAX} 3"));
            self.line(&format!("gap_hi 0 {MAX} 1"));
            self.line(&format!("gap_hi 0 {} 3", MAX - 1));
            if alloc_first {
                self.line(&format!("ralloc 3 0 {MAX} 7"));
            }
            self.line(&format!("ralloc 2 0 {MAX} 8"));
            self.line("dump");
            self.line("validate");
        }
        // 4: a store over [0, MAX], an erase, then gap searches and allocations.
        self.init(true, Space::Small(100));
        self.line(&format!("store 0 {MAX} 1"));
        self.line("gap_lo 0 100 1");
        self.line("erase 77");
        // The kernel keeps an empty leaf here, this crate an empty tree.
        self.line(&format!(
            "cursor 5 walk next:{MAX} prev:0 find:{MAX} find_rev:0"
        ));
        self.line(&format!(
            "cursor 5 next_range:{MAX} prev_range:0 find_range:9"
        ));
        self.line("gap_lo 0 100 1");
        self.line("gap_hi 0 100 1");
        self.line("alloc 4 0 100 2");
        self.line("ralloc 4 0 100 3");
        self.line("cyclic 0 100 50 4");
        self.line("dump");
        self.line("validate");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("gen") if args.len() == 4 => {
            let seed: u64 = args[1].parse().expect("SEED");
            let n: u64 = args[3].parse().expect("OPS");
            let mut g = Gen::new(seed);
            let _ = writeln!(g.out, "# kernel_oracle gen {seed} {} {n}", args[2]);
            g.kind(&args[2], n);
            print!("{}", g.out);
            ExitCode::SUCCESS
        }
        Some("check") if args.len() >= 3 && args.len() % 2 == 1 => {
            let mut total = support::Report::default();
            for pair in args[1..].chunks(2) {
                let script = std::fs::read_to_string(&pair[0]).expect("script");
                let kernel = std::fs::read_to_string(&pair[1]).expect("kernel output");
                let rep = support::replay(&pair[0], &script, &kernel);
                total.merge(&rep);
            }
            print!("{}", total.table());
            if total.ndiffs == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!(
                "usage: kernel_oracle gen SEED KIND OPS | check SCRIPT KERNEL [SCRIPT KERNEL ...]"
            );
            ExitCode::from(2)
        }
    }
}
