//! The descriptor table on a maple tree (`struct files_struct`): descriptor `fd` is index `fd`
//! of an allocation tree holding `Arc<File>`; a new descriptor is the lowest free index below
//! `RLIMIT_NOFILE`, found by the tree's gap search (`alloc_range(0..nofile, 1, file)`), which
//! is what `get_unused_fd_flags` computes with its bitmaps.

use crate::sync::{Arc, AtomicU64, Ordering};
use std::os::fd::OwnedFd;

use maple_tree::Guard;

use super::file::{pipe, EventFd, File, FileOperations, RealFile, RegularFile};
use super::Errno;
use maple_tree::{Error, MapleTree};

/// A descriptor table: lowest-free allocation through the tree's gap search, lock-free lookups.
///
/// ```
/// use maple_poll::{Errno, FdTable};
///
/// let files = FdTable::new();
/// let a = files.open_regular().unwrap();
/// let b = files.open_regular().unwrap();
/// let c = files.open_regular().unwrap();
/// assert_eq!((a, b, c), (0, 1, 2));
/// files.close(b).unwrap();
/// assert_eq!(files.dup(c), Ok(1)); // the lowest free descriptor
/// assert_eq!(files.close(b), Ok(())); // closes the dup
/// assert_eq!(files.close(b), Err(Errno::EBADF));
/// ```
pub struct FdTable {
    fdt: MapleTree<Arc<File>>,
    nofile: AtomicU64,
}

impl Default for FdTable {
    fn default() -> Self {
        Self::new()
    }
}

impl FdTable {
    /// The default soft `RLIMIT_NOFILE`.
    pub const DEFAULT_NOFILE: u64 = 1024;
    /// The largest limit accepted (`sysctl fs.nr_open`'s default, 2^20).
    pub const NR_OPEN: u64 = 1 << 20;

    /// An empty table with `RLIMIT_NOFILE` = [`Self::DEFAULT_NOFILE`].
    pub fn new() -> Self {
        FdTable {
            fdt: MapleTree::new_alloc(),
            nofile: AtomicU64::new(Self::DEFAULT_NOFILE),
        }
    }

    /// `RLIMIT_NOFILE`: descriptors are below it and `poll` refuses more entries.
    pub fn rlimit_nofile(&self) -> u64 {
        self.nofile.load(Ordering::Relaxed)
    }

    /// `setrlimit(RLIMIT_NOFILE)`: `EINVAL` above [`Self::NR_OPEN`]. Open descriptors above a
    /// lowered limit stay open (as in Linux).
    pub fn set_rlimit_nofile(&self, nofile: u64) -> Result<(), Errno> {
        if nofile > Self::NR_OPEN {
            return Err(Errno::EINVAL);
        }
        self.nofile.store(nofile, Ordering::Relaxed);
        Ok(())
    }

    fn alloc_fd(&self, file: Arc<File>) -> Result<i32, Errno> {
        let nofile = self.rlimit_nofile();
        if nofile == 0 {
            return Err(Errno::EMFILE);
        }
        match self.fdt.alloc_range(0..nofile, 1, file) {
            Ok(fd) => i32::try_from(*fd.start()).map_err(|_| Errno::EMFILE),
            Err(Error::NoRoom) => Err(Errno::EMFILE),
            Err(_) => Err(Errno::EINVAL),
        }
    }

    /// `get_unused_fd_flags` + `fd_install`: the lowest free descriptor now refers to `file`.
    /// `EMFILE` if none is free below `RLIMIT_NOFILE` (the file is then released).
    pub fn fd_install(&self, file: File) -> Result<i32, Errno> {
        self.alloc_fd(Arc::new(file))
    }

    /// Installs a new file with operations `ops`.
    pub fn install(&self, ops: impl FileOperations) -> Result<i32, Errno> {
        self.fd_install(File::new(ops))
    }

    /// An unlinked in-memory regular file (poll2's `mkstemp` + `unlink`).
    pub fn open_regular(&self) -> Result<i32, Errno> {
        self.install(RegularFile::new())
    }

    /// `eventfd(initval, EFD_NONBLOCK [| EFD_SEMAPHORE])`.
    pub fn eventfd(&self, initval: u64, semaphore: bool) -> Result<i32, Errno> {
        self.install(EventFd::new(initval, semaphore))
    }

    /// `pipe2(O_NONBLOCK)`: `[read end, write end]`, the two lowest free descriptors.
    pub fn pipe(&self) -> Result<[i32; 2], Errno> {
        let (r, w) = pipe();
        let rfd = self.install(r)?;
        match self.install(w) {
            Ok(wfd) => Ok([rfd, wfd]),
            Err(e) => {
                // The write end was released by its drop; close the read end too.
                let _ = self.close(rfd);
                Err(e)
            }
        }
    }

    /// Installs a real OS descriptor behind the [`RealFile`] adaptor.
    pub fn install_real(&self, fd: OwnedFd) -> Result<i32, Errno> {
        self.install(RealFile::new(fd))
    }

    /// Pins a guard for [`fdget`](Self::fdget).
    pub fn pin(&self) -> maple_tree::TreeGuard<'_> {
        self.fdt.pin()
    }

    /// `files_lookup_fd_rcu`: the file behind `fd`, borrowed for as long as `guard` lives (no
    /// reference taken: the memory stays until the guard is dropped, but another thread's
    /// `close` may run `->release` meanwhile). `None` for negative or closed descriptors.
    #[inline]
    pub fn lookup_fd_rcu<'g>(&'g self, fd: i32, guard: &'g Guard) -> Option<&'g File> {
        let fd = u64::try_from(fd).ok()?;
        self.fdt.load(fd, guard)
    }

    /// `fdget`, as the kernel's `__fget_light` decides: when the table is not `shared` (no other
    /// task can reach it, `files->count == 1`), the file is borrowed, since nobody can close it
    /// meanwhile; otherwise a reference is taken (`__fget_files_rcu`: the count is raised unless
    /// it already dropped to zero, which means closed), so that a concurrent `close` cannot run
    /// `->release` before the returned [`Fd`] is dropped (`fdput`). `None` for negative or closed
    /// descriptors.
    #[inline(always)]
    pub fn fdget<'g>(&'g self, fd: i32, shared: bool, guard: &'g Guard) -> Option<Fd<'g>> {
        let file = self.lookup_fd_rcu(fd, guard)?;
        #[cfg(loom)]
        let shared = shared && !crate::loom_knobs::fdget_borrow_shared();
        if !shared {
            return Some(Fd {
                file,
                counted: false,
            });
        }
        file.get_file_not_zero().then_some(Fd {
            file,
            counted: true,
        })
    }

    /// `fget`: a counted handle on the file behind `fd`.
    pub fn fget(&self, fd: i32) -> Option<Arc<File>> {
        self.fdt.get(u64::try_from(fd).ok()?)
    }

    /// `close(fd)`: `EBADF` if `fd` is not open. The file is released (`->release`) when this
    /// was its last descriptor.
    pub fn close(&self, fd: i32) -> Result<(), Errno> {
        let idx = u64::try_from(fd).map_err(|_| Errno::EBADF)?;
        loop {
            let file = self.fdt.get(idx).ok_or(Errno::EBADF)?;
            let mut w = self.fdt.lock();
            match w.load(idx) {
                Some(cur) if core::ptr::eq(cur, &*file) => {
                    w.erase(idx);
                    drop(w);
                    file.fput();
                    return Ok(());
                }
                None => return Err(Errno::EBADF),
                // Closed and reused under us: look again.
                Some(_) => continue,
            }
        }
    }

    /// `dup(fd)`: the lowest free descriptor now refers to the same file. `EBADF` if `fd` is not
    /// open, `EMFILE` if no descriptor is free.
    pub fn dup(&self, fd: i32) -> Result<i32, Errno> {
        let file = self.fget(fd).ok_or(Errno::EBADF)?;
        if !file.get_file_not_zero() {
            return Err(Errno::EBADF);
        }
        match self.alloc_fd(Arc::clone(&file)) {
            Ok(nfd) => Ok(nfd),
            Err(e) => {
                file.fput();
                Err(e)
            }
        }
    }

    /// `read(fd, buf)` (non-blocking files). The table is reachable by every holder of `&self`,
    /// so the file is referenced for the call ([`fdget`](Self::fdget) with `shared`).
    pub fn read(&self, fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
        let guard = self.pin();
        let f = self.fdget(fd, true, &guard).ok_or(Errno::EBADF)?;
        f.f_op().read(buf)
    }

    /// `write(fd, buf)` (non-blocking files), the file referenced for the call as in
    /// [`read`](Self::read).
    pub fn write(&self, fd: i32, buf: &[u8]) -> Result<usize, Errno> {
        let guard = self.pin();
        let f = self.fdget(fd, true, &guard).ok_or(Errno::EBADF)?;
        f.f_op().write(buf)
    }

    /// Checks the tree's invariants (tests).
    #[cfg(test)]
    pub(crate) fn validate(&self) -> Result<(), maple_tree::ValidateError> {
        self.fdt.validate()
    }

    /// Number of open descriptors. `O(n)`.
    pub fn count(&self) -> usize {
        self.fdt.count()
    }
}

impl core::fmt::Debug for FdTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FdTable")
            .field("open", &self.count())
            .field("rlimit_nofile", &self.rlimit_nofile())
            .finish()
    }
}

/// What [`FdTable::fdget`] returns (the kernel's `struct fd`): the file, borrowed or with a
/// reference taken. Dropping it is `fdput`: the reference, if one was taken, is put (`fput`),
/// and the last one runs `->release`.
pub struct Fd<'g> {
    file: &'g File,
    counted: bool,
}

impl Fd<'_> {
    /// Whether a reference was taken (`FDPUT_FPUT`).
    pub fn is_counted(&self) -> bool {
        self.counted
    }
}

impl core::ops::Deref for Fd<'_> {
    type Target = File;
    fn deref(&self) -> &File {
        self.file
    }
}

impl Drop for Fd<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.counted {
            self.file.fput();
        }
    }
}

impl core::fmt::Debug for Fd<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fd")
            .field("file", self.file)
            .field("counted", &self.counted)
            .finish()
    }
}
