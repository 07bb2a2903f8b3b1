//! Size limits shared by the chunker (`chunks.rs`, which decides what gets parsed) and the
//! lowerer (`lower.rs`, which decides what gets kept): the chunker must keep every statement
//! the lowerer would read, so both read the same numbers from here.

/// A function without a token up to this size keeps its body in the lowering, and is kept
/// by the chunking when arch-dependent code calls it: a caller may hand it a device value.
pub const TOKENLESS_HELPER_BYTES: usize = 1024;
/// `def` and `class` blocks larger than this are split into their statements. A split
/// function is marked incomplete when lowered, and inference then reads the whole module.
pub const SPLIT_BLOCK_BYTES: usize = 4 * 1024;
/// Functions larger than this keep no body: helpers are small, and big bodies cost memory.
/// Equal to the split size, so a kept body is never one the chunker split.
pub const MAX_HELPER_BODY_BYTES: usize = SPLIT_BLOCK_BYTES;
/// Assignments without arch tokens larger than this are not lowered.
pub const MAX_PLAIN_ASSIGN_BYTES: usize = 2_000;
