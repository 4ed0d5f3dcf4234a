//! The driver: the corpus, then seeded mutations of it.

use crate::Target;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Inputs tried.
    pub inputs: u64,
    /// Inputs that broke an invariant, with the files they were written to.
    pub crashes: Vec<PathBuf>,
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

/// The corpus of `target`, sorted by file name (an empty input if there is none).
fn corpus(root: &Path, target: &str) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("corpus").join(target))
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut inputs: Vec<Vec<u8>> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
    if inputs.is_empty() {
        inputs.push(Vec::new());
    }
    inputs
}

/// One mutation of `input`, splicing from `other`.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !bytes.is_empty() => {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next() as u8;
            }
            1 => {
                let at = rng.below(bytes.len() + 1);
                bytes.insert(at, rng.next() as u8);
            }
            2 if !bytes.is_empty() => {
                let at = rng.below(bytes.len());
                bytes.remove(at);
            }
            3 => bytes.truncate(rng.below(bytes.len() + 1)),
            4 if !other.is_empty() => {
                let from = rng.below(other.len());
                let len = rng.below(other.len() - from + 1);
                let at = rng.below(bytes.len() + 1);
                bytes.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => {
                let at = rng.below(bytes.len() + 1);
                let flip = (0..1 + rng.below(8)).map(|_| rng.next() as u8);
                bytes.splice(at..at, flip);
            }
        }
    }
    bytes
}

/// Runs `target` on its corpus, then on `iterations` mutated inputs from `seed`; crashes go
/// to `root/crashes/`.
pub fn run(root: &Path, name: &str, target: Target, iterations: u64, seed: u64) -> Outcome {
    let corpus = corpus(root, name);
    let mut rng = Rng(seed);
    let mut outcome = Outcome {
        inputs: 0,
        crashes: Vec::new(),
    };
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut pool = corpus.clone();
    for index in 0..corpus.len() as u64 + iterations {
        let input = match corpus.get(index as usize) {
            Some(input) => input.clone(),
            None => {
                let base = &pool[rng.below(pool.len())];
                let other = &pool[rng.below(pool.len())];
                mutate(&mut rng, base, other)
            }
        };
        outcome.inputs += 1;
        if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
            let dir = root.join("crashes");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-{}", outcome.crashes.len()));
            let _ = std::fs::write(&file, &input);
            outcome.crashes.push(file);
        } else if pool.len() < 256 && rng.below(8) == 0 {
            // Keep some inputs that ran, to mutate further.
            pool.push(input);
        }
    }
    std::panic::set_hook(hook);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails_on_ff(bytes: &[u8]) {
        assert!(!bytes.contains(&0xff));
    }

    #[test]
    fn a_breaking_input_is_found_and_kept() {
        let root = std::env::temp_dir().join(format!("fuzz-test-{}", std::process::id()));
        let outcome = run(&root, "none", fails_on_ff, 2_000, 1);
        assert_eq!(outcome.inputs, 2_001);
        assert!(!outcome.crashes.is_empty());
        let kept = std::fs::read(&outcome.crashes[0]).unwrap();
        assert!(kept.contains(&0xff));
        let _ = std::fs::remove_dir_all(root);
    }
}
