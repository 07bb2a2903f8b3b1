//! A fuzzing loop on stable Rust, for machines without cargo-fuzz: random mutations (bit and
//! byte flips, interesting values, inserted, deleted, duplicated and spliced ranges, cuts) of
//! the seed files, each input run under `catch_unwind` and timed. A panic, or an input that
//! takes longer than the hang limit, is written to `fuzz/artifacts/<target>/` and counted.
//!
//! Usage: loop TARGET SECONDS [HANG_SECONDS]   (run from the repository root or fuzz/)

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

fn seeds(repo: &Path, folders: &[&str]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = folders.iter().map(|f| repo.join(f)).collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                stack.push(entry.path());
            }
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.len() <= 4 << 20
        {
            out.push(bytes);
        }
    }
    if out.is_empty() {
        out.push(Vec::new());
    }
    out
}

/// `loop --write-seeds TARGET DIR`: the target's seed files, copied into DIR under numbered
/// names, as the starting corpus of libFuzzer (ci/fuzz.sh).
fn write_seeds(args: &[String]) {
    let (Some(name), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: loop --write-seeds TARGET DIR");
        std::process::exit(2);
    };
    let Some(&(_, _, folders)) = gatefix_fuzz::TARGETS.iter().find(|t| t.0 == name) else {
        eprintln!("unknown target {name}");
        std::process::exit(2);
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let dir = Path::new(dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(2);
    }
    let seeds = seeds(&repo, folders);
    for (i, seed) in seeds.iter().enumerate() {
        let path = dir.join(format!("seed-{i:04}"));
        if let Err(e) = std::fs::write(&path, seed) {
            eprintln!("{}: {e}", path.display());
            std::process::exit(2);
        }
    }
    println!("{name}: {} seeds in {}", seeds.len(), dir.display());
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    const INTERESTING: &[u64] = &[0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, u64::MAX];
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            2 if len > 0 => {
                let width = [1, 2, 4, 8][rng.below(4)];
                let i = rng.below(len);
                let value = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
                for (k, b) in value.iter().take(width).enumerate() {
                    if let Some(slot) = input.get_mut(i + k) {
                        *slot = *b;
                    }
                }
            }
            3 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                input.splice(i..i, bytes);
            }
            4 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(256));
                input.drain(i..i + n);
            }
            5 if len > 0 => {
                let i = rng.below(len);
                let n = 1 + rng.below((len - i).min(256));
                let chunk = input[i..i + n].to_vec();
                let at = rng.below(len + 1);
                input.splice(at..at, chunk);
            }
            6 => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let i = rng.below(other.len());
                    let n = 1 + rng.below((other.len() - i).min(512));
                    let at = rng.below(len + 1);
                    input.splice(at..at, other[i..i + n].iter().copied());
                }
            }
            7 if len > 0 => input.truncate(rng.below(len)),
            _ => {
                // Python-ish and TOML-ish punctuation, where structure breaks.
                let tokens: &[&[u8]] = &[b"(", b")", b"[", b"]", b"\n", b"    ", b"\"", b"'''", b"=", b",", b"*", b"\\", b"#", b"{", b"}", b"\xff"];
                let t = tokens[rng.below(tokens.len())];
                let at = rng.below(len + 1);
                input.splice(at..at, t.iter().copied());
            }
        }
    }
    input.truncate(1 << 20);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--write-seeds") {
        write_seeds(&args[2..]);
        return;
    }
    let (Some(name), Some(seconds)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!("usage: loop TARGET SECONDS [HANG_SECONDS]; targets: {}",
            gatefix_fuzz::TARGETS.iter().map(|t| t.0).collect::<Vec<_>>().join(", "));
        std::process::exit(2);
    };
    let hang = Duration::from_secs(args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10));
    let Some(&(_, target, folders)) = gatefix_fuzz::TARGETS.iter().find(|t| t.0 == name) else {
        eprintln!("unknown target {name}");
        std::process::exit(2);
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let seeds = seeds(&repo, folders);
    let artifacts = repo.join("fuzz/artifacts").join(name);
    std::panic::set_hook(Box::new(|_| {})); // findings are reported below, once each
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ std::process::id() as u64);
    let started = Instant::now();
    let (mut runs, mut panics, mut slow) = (0u64, 0u64, 0u64);
    let mut slowest = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(seconds) {
        let mut input = seeds[rng.below(seeds.len())].clone();
        if runs % 16 != 0 {
            mutate(&mut rng, &mut input, &seeds);
        }
        let t = Instant::now();
        let result = std::panic::catch_unwind(|| target(&input));
        let took = t.elapsed();
        slowest = slowest.max(took);
        runs += 1;
        let finding = match (result.is_err(), took > hang) {
            (true, _) => { panics += 1; Some("panic") }
            (false, true) => { slow += 1; Some("slow") }
            _ => None,
        };
        if let Some(kind) = finding {
            let _ = std::fs::create_dir_all(&artifacts);
            let path = artifacts.join(format!("{kind}-{runs}"));
            let _ = std::fs::write(&path, &input);
            eprintln!("{name}: {kind} ({took:.2?}) on {} bytes, saved as {}", input.len(), path.display());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{name}: {runs} executions in {secs:.0} s ({:.0}/s), {panics} panics, {slow} over {hang:?}, slowest {slowest:.2?}",
        runs as f64 / secs
    );
    if panics + slow > 0 {
        std::process::exit(1);
    }
}
