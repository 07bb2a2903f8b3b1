use clap::Parser;

use gatefix::cli::{Cli, run};
use gatefix::error::exit;
use gatefix::process::RESOLVER_STACK_BYTES;

/// tree-sitter and the lowered IR allocate millions of small blocks per run; mimalloc
/// serves them in a fraction of glibc malloc's time. Rust's allocations go through the
/// global allocator, tree-sitter's through `use_mimalloc_in_tree_sitter`, and the C code that
/// calls `malloc` itself (tree-sitter-python's scanner frees and reallocates its indent stack
/// at every token: a million glibc calls on a big site) through mimalloc's `override`
/// feature, which defines `malloc` and `free` in this binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" fn ts_calloc(count: usize, size: usize) -> *mut std::ffi::c_void {
    match count.checked_mul(size) {
        // SAFETY: mi_zalloc is C's calloc for a size that did not overflow.
        Some(bytes) => unsafe { libmimalloc_sys::mi_zalloc(bytes) },
        None => std::ptr::null_mut(),
    }
}

/// Points tree-sitter's own allocations (trees, parse stacks, cursors) at mimalloc. Must
/// run before any tree-sitter object exists, so that each block is freed by the allocator
/// that made it.
fn use_mimalloc_in_tree_sitter() {
    // SAFETY: called first thing in `main`, before any parser, tree or cursor is created;
    // the four functions form one allocator.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: ts_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        }));
    }
}

fn main() {
    gatefix::process::transparent_huge_pages(false);
    use_mimalloc_in_tree_sitter();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = err.print();
            std::process::exit(code);
        }
    };
    // Resolution recurses once per name hop, call and expression level, in up to eight frames
    // (`gate::resolve`, bounded by its depth limit and step budget): more than the default
    // 2 MiB of a worker thread. A thread's stack is reserved address space, committed only as
    // it is used, so the room for the deepest chain costs nothing until then.
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(RESOLVER_STACK_BYTES)
        .build_global();
    let outcome = std::thread::Builder::new()
        .stack_size(RESOLVER_STACK_BYTES)
        .spawn(move || run(cli))
        .map_err(|e| gatefix::error::Error::input(format!("cannot start the main thread: {e}")))
        .and_then(|handle| {
            handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("gatefix: error: {err}");
            std::process::exit(err.exit_code());
        }
    }
}
