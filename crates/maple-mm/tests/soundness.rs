//! Corners of the safe API of the page frames that must stay sound: an access outside the page
//! is an error, never a read or write past the buffer.

use maple_mm::{MmError, PageFrame, PAGE_SIZE};

#[test]
fn page_frame_accesses_outside_the_page_are_errors() {
    let f = PageFrame::from_bytes(b"abc");
    let mut buf = [0u8; 3];
    assert_eq!(f.read(0, &mut buf), Ok(()));
    assert_eq!(&buf, b"abc");
    let end = PAGE_SIZE as usize;
    assert_eq!(f.read(end - 2, &mut buf), Err(MmError::Fault));
    assert_eq!(f.read(usize::MAX, &mut buf), Err(MmError::Fault));
    assert_eq!(f.write(end - 1, b"xy"), Err(MmError::Fault));
    assert_eq!(f.write(end - 2, b"xy"), Ok(()));
    f.read(0, &mut buf).unwrap();
    assert_eq!(&buf, b"abc", "a refused write changed nothing");
}
