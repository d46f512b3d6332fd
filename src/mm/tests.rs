//! Unit tests of the VMA manager (the model-based ones live in `tests/mm_*.rs`).
