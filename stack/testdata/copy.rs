// copy.rs: the uutils shape, one file opened by three functions, built
// as a release (-C opt-level=3) with debug information.
use std::fs::File;
use std::io::Read;

#[inline(never)]
fn check_for_data(path: &str) -> usize {
    let f = File::open(path).expect("open");
    drop(f);
    1
}

#[inline(never)]
fn check_sparse(path: &str) -> usize {
    let f = File::open(path).expect("open");
    drop(f);
    2
}

#[inline(never)]
fn do_copy(path: &str) -> usize {
    let mut f = File::open(path).expect("open");
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).expect("read");
    buf.len()
}

#[inline(never)]
fn copy_file(path: &str) -> usize {
    let mut n = check_for_data(path);
    n += check_sparse(path);
    n += do_copy(path);
    // Keep the calls from being a tail call.
    unsafe { std::ptr::read_volatile(&n) }
}

fn main() {
    let path = std::env::args().nth(1).expect("a path");
    let n = copy_file(&path);
    std::process::exit(if n > 0 { 0 } else { 1 });
}
