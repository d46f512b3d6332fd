//! `/proc/PID/maps` text: rendering an [`Mm`] and replaying a real maps file into one.
//!
//! A line is `start-end perms offset major:minor inode` followed, for named mappings, by
//! padding to column 73 and the name (`show_map_vma` pads the header to 72 characters and adds
//! one space). Anonymous VMAs show offset 0; file VMAs their `pgoff` in bytes.

use crate::sync::Arc;
use core::fmt;
use std::collections::HashMap;
use std::fmt::Write as _;

use super::{
    is_page_aligned, FileKind, MappedFile, Mm, MmConfig, VmFlags, Vma, VmaDesc, VmaKind,
    VmaSnapshot, PAGE_SHIFT,
};

/// Why a maps text could not be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapsError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for MapsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "maps line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for MapsError {}

/// Column at which names start, minus the separating space (`25 + sizeof(void *) * 6 - 1`).
const NAME_PAD: usize = 72;

fn render_line(out: &mut String, start: u64, end: u64, desc: &VmaDesc) {
    let f = desc.flags;
    let c = |flag: VmFlags, ch: char| if f.contains(flag) { ch } else { '-' };
    let (off, dev, ino, name): (u64, (u32, u32), u64, Option<&str>) = match &desc.kind {
        VmaKind::File(file) => (
            desc.pgoff << PAGE_SHIFT,
            file.dev(),
            file.inode(),
            Some(file.path()),
        ),
        VmaKind::Anon(name) => (0, (0, 0), 0, name.as_deref()),
    };
    let line_start = out.len();
    let _ = write!(
        out,
        "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
        start,
        end,
        c(VmFlags::READ, 'r'),
        c(VmFlags::WRITE, 'w'),
        c(VmFlags::EXEC, 'x'),
        if f.contains(VmFlags::MAYSHARE) {
            's'
        } else {
            'p'
        },
        off,
        dev.0,
        dev.1,
        ino
    );
    if let Some(name) = name {
        while out.len() - line_start < NAME_PAD {
            out.push(' ');
        }
        out.push(' ');
        out.push_str(name);
    }
    out.push('\n');
}

pub(crate) fn render<'a>(
    vmas: impl Iterator<Item = &'a Vma>,
    gate: Option<&VmaSnapshot>,
) -> String {
    let mut out = String::new();
    for v in vmas {
        render_line(&mut out, v.start(), v.end(), &v.desc());
    }
    if let Some(g) = gate {
        render_line(&mut out, g.start, g.end, &g.desc);
    }
    out
}

fn hex(s: &str, line: usize, what: &'static str) -> Result<u64, MapsError> {
    u64::from_str_radix(s, 16).map_err(|_| MapsError { line, reason: what })
}

/// Splits off the next space-separated field.
fn field<'a>(rest: &mut &'a str, line: usize, what: &'static str) -> Result<&'a str, MapsError> {
    let s = rest.trim_start_matches(' ');
    let end = s.find(' ').unwrap_or(s.len());
    if end == 0 {
        return Err(MapsError { line, reason: what });
    }
    *rest = &s[end..];
    Ok(&s[..end])
}

fn file_kind(path: &str) -> FileKind {
    if path.starts_with("/dev/zero") || path.starts_with("/SYSV") || path.starts_with("/memfd:") {
        FileKind::Shmem
    } else if path.starts_with("/anon_hugepage") || path.starts_with("/dev/hugepages") {
        FileKind::Hugetlb
    } else {
        FileKind::Regular
    }
}

impl Mm {
    /// The `/proc/PID/maps` text of this address space (takes the mmap read lock).
    ///
    /// ```
    /// use maple_mm::{MapFlags, MapSource, Mm, Prot};
    /// let mm = Mm::new();
    /// mm.mmap(0x10000000, 0x2000, Prot::READ | Prot::WRITE, MapFlags::PRIVATE | MapFlags::FIXED, MapSource::Anon).unwrap();
    /// assert_eq!(mm.render_maps(), "10000000-10002000 rw-p 00000000 00:00 0 \n");
    /// ```
    pub fn render_maps(&self) -> String {
        self.read().render_maps()
    }

    /// Replays a maps text (e.g. a real `/proc/self/maps`) into a new address space, one VMA
    /// per line, exactly as listed (nothing is merged). Lines must be page aligned, sorted and
    /// non-overlapping; anonymous lines must show offset 0. A line at or above `TASK_SIZE`
    /// (`[vsyscall]`) becomes the gate VMA, which is rendered last and is not in the tree.
    /// Files are identified by (device, inode, path): lines of one file share one
    /// [`MappedFile`]. Private writable lines get `VM_ACCOUNT` (the text cannot show
    /// `MAP_NORESERVE`, nor a read-only VMA that was charged while writable); no VMA has an
    /// `anon_vma`. `rendered(parsed(text)) == text` for the kernel's own output.
    ///
    /// ```
    /// use maple_mm::{Mm, MmConfig};
    /// let text = "\
    /// 55b9ab64b000-55b9ab64d000 r--p 00000000 fe:00 247030                     /usr/bin/cat
    /// 55b9bcb9c000-55b9bcbbd000 rw-p 00000000 00:00 0                          [heap]
    /// 7fdc8fcf1000-7fdc8fd13000 rw-p 00000000 00:00 0 \n";
    /// let mm = Mm::from_maps(text, MmConfig::default()).unwrap();
    /// assert_eq!(mm.map_count(), 3);
    /// assert_eq!(mm.render_maps(), text);
    /// ```
    pub fn from_maps(text: &str, cfg: MmConfig) -> Result<Mm, MapsError> {
        let mut mm = Mm::with_config(cfg);
        let task_size = mm.cfg.task_size;
        let mut files: HashMap<(u32, u32, u64, String), Arc<MappedFile>> = HashMap::new();
        let mut last_end = 0u64;
        let mut count = 0usize;
        let mut gate = None;
        {
            let mut w = mm.tree.exclusive();
            for (i, raw) in text.lines().enumerate() {
                let line = i + 1;
                if raw.trim().is_empty() {
                    continue;
                }
                if gate.is_some() {
                    return Err(MapsError {
                        line,
                        reason: "line after the gate VMA",
                    });
                }
                let mut rest = raw;
                let range = field(&mut rest, line, "missing range")?;
                let (s, e) = range.split_once('-').ok_or(MapsError {
                    line,
                    reason: "range without '-'",
                })?;
                let start = hex(s, line, "bad start address")?;
                let end = hex(e, line, "bad end address")?;
                if start >= end || !is_page_aligned(start) || !is_page_aligned(end) {
                    return Err(MapsError {
                        line,
                        reason: "empty or unaligned range",
                    });
                }
                if start < last_end {
                    return Err(MapsError {
                        line,
                        reason: "ranges overlap or are not sorted",
                    });
                }
                let perms = field(&mut rest, line, "missing permissions")?.as_bytes();
                if perms.len() != 4 {
                    return Err(MapsError {
                        line,
                        reason: "bad permissions",
                    });
                }
                let mut flags = VmFlags::MAY_RWX;
                for (k, (ch, flag)) in [
                    (b'r', VmFlags::READ),
                    (b'w', VmFlags::WRITE),
                    (b'x', VmFlags::EXEC),
                ]
                .iter()
                .enumerate()
                {
                    match perms[k] {
                        b'-' => {}
                        c if c == *ch => flags |= *flag,
                        _ => {
                            return Err(MapsError {
                                line,
                                reason: "bad permissions",
                            })
                        }
                    }
                }
                match perms[3] {
                    b'p' => {}
                    b's' => flags |= VmFlags::MAYSHARE | VmFlags::SHARED,
                    _ => {
                        return Err(MapsError {
                            line,
                            reason: "bad permissions",
                        })
                    }
                }
                let off = hex(
                    field(&mut rest, line, "missing offset")?,
                    line,
                    "bad offset",
                )?;
                let dev = field(&mut rest, line, "missing device")?;
                let (ma, mi) = dev.split_once(':').ok_or(MapsError {
                    line,
                    reason: "bad device",
                })?;
                let dev = (
                    u32::from_str_radix(ma, 16).map_err(|_| MapsError {
                        line,
                        reason: "bad device",
                    })?,
                    u32::from_str_radix(mi, 16).map_err(|_| MapsError {
                        line,
                        reason: "bad device",
                    })?,
                );
                let ino: u64 = field(&mut rest, line, "missing inode")?
                    .parse()
                    .map_err(|_| MapsError {
                        line,
                        reason: "bad inode",
                    })?;
                let name = rest.trim_start_matches(' ');
                let name = if name.is_empty() { None } else { Some(name) };
                let is_file = ino != 0 || dev != (0, 0) || name.is_some_and(|n| n.starts_with('/'));
                let (kind, pgoff) = if is_file {
                    let path = name.unwrap_or("").to_owned();
                    if !is_page_aligned(off) {
                        return Err(MapsError {
                            line,
                            reason: "unaligned file offset",
                        });
                    }
                    let fk = file_kind(&path);
                    let file = files
                        .entry((dev.0, dev.1, ino, path.clone()))
                        .or_insert_with(|| MappedFile::new(&path, dev, ino, fk, true))
                        .clone();
                    if fk == FileKind::Hugetlb {
                        flags |= VmFlags::HUGETLB;
                    }
                    (VmaKind::File(file), off >> PAGE_SHIFT)
                } else {
                    if off != 0 {
                        return Err(MapsError {
                            line,
                            reason: "anonymous mapping with an offset",
                        });
                    }
                    match name {
                        Some("[stack]") => flags |= VmFlags::GROWSDOWN,
                        Some(n)
                            if n.starts_with('[') && n != "[heap]" && !n.starts_with("[anon:") =>
                        {
                            // vdso, vvar, vsyscall: special mappings, never merged or grown.
                            flags |= VmFlags::DONTEXPAND;
                        }
                        _ => {}
                    }
                    (VmaKind::Anon(name.map(Arc::from)), start >> PAGE_SHIFT)
                };
                // A private writable mapping is charged unless it was mapped MAP_NORESERVE,
                // which the maps text does not show: assume it was not (accountable_mapping).
                if flags.contains(VmFlags::WRITE)
                    && !flags.intersects(VmFlags::MAYSHARE | VmFlags::HUGETLB)
                {
                    flags |= VmFlags::ACCOUNT;
                }
                let desc = VmaDesc {
                    flags,
                    kind,
                    pgoff,
                    uffd: None,
                    anon_vma: None,
                };
                if end > task_size {
                    if start < task_size {
                        return Err(MapsError {
                            line,
                            reason: "range crosses TASK_SIZE",
                        });
                    }
                    gate = Some(VmaSnapshot { start, end, desc });
                    continue;
                }
                if count >= mm.cfg.max_map_count {
                    return Err(MapsError {
                        line,
                        reason: "more VMAs than max_map_count",
                    });
                }
                let r = w.store_range(start..end, Arc::new(Vma::new(start, end, desc, -1)));
                debug_assert!(r.is_ok());
                count += 1;
                last_end = end;
            }
        }
        mm.mmap_lock.get_mut().map_count = count;
        mm.gate = gate;
        Ok(mm)
    }
}
