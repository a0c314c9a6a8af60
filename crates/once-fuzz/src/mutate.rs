//! Input generation for the stable driver: a seeded PRNG and structure-aware mutations of the
//! seed corpus.
//!
//! Without coverage feedback, the inputs that reach deep code are the ones close to valid, so
//! every input starts from a seed (or from an earlier mutant) and gets a few edits that keep most
//! of its shape: byte flips, insertions and deletions, a splice with another entry, the target's
//! dictionary tokens, whole lines duplicated, dropped or swapped, and very long runs. The same
//! seed gives the same sequence of inputs. Must never read the clock or any other source of
//! randomness than its seed.

/// SplitMix64: tiny, fast and good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence `seed` fixes.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // The modulo bias is irrelevant for picking mutations.
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Bytes that break parsers more often than others.
const INTERESTING: &[u8] = b"\0\n\r\t \"'\\/[]{}=,:.#+-0123456789eE\x7f\xff\xc3\xe2\xf0";

/// Builds inputs for one target.
#[derive(Debug)]
pub struct Mutator {
    rng: Rng,
    dictionary: Vec<Vec<u8>>,
    max_len: usize,
}

impl Mutator {
    /// A mutator with `dictionary` tokens (the target's and the shared ones), producing inputs of
    /// at most `max_len` bytes.
    pub fn new(seed: u64, dictionary: &[&str], max_len: usize) -> Mutator {
        let mut tokens: Vec<Vec<u8>> = dictionary.iter().map(|t| t.as_bytes().to_vec()).collect();
        tokens.extend(crate::COMMON_TOKENS.iter().map(|t| t.as_bytes().to_vec()));
        Mutator {
            rng: Rng::new(seed),
            dictionary: tokens,
            max_len,
        }
    }

    /// The generator, for the driver's own choices.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// A new input: an entry of `pool` with one to eight mutations.
    pub fn generate(&mut self, pool: &[Vec<u8>]) -> Vec<u8> {
        let mut data = pool
            .get(self.rng.below(pool.len()))
            .cloned()
            .unwrap_or_default();
        let rounds = 1 + self.rng.below(4) + self.rng.below(5);
        for _ in 0..rounds {
            self.mutate(&mut data, pool);
        }
        data.truncate(self.max_len);
        data
    }

    fn mutate(&mut self, data: &mut Vec<u8>, pool: &[Vec<u8>]) {
        let len = data.len();
        match self.rng.below(12) {
            0 if len > 0 => {
                let at = self.rng.below(len);
                data[at] ^= 1 << self.rng.below(8);
            }
            1 if len > 0 => {
                let at = self.rng.below(len);
                data[at] = INTERESTING[self.rng.below(INTERESTING.len())];
            }
            2 => {
                let at = self.rng.below(len + 1);
                let n = 1 + self.rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                data.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let at = self.rng.below(len);
                let most = if self.rng.one_in(8) { len } else { 16 };
                let n = 1 + self.rng.below(most.min(len - at));
                data.drain(at..at + n);
            }
            4 if len > 0 => {
                let from = self.rng.below(len);
                let n = 1 + self.rng.below((len - from).min(64));
                let chunk = data[from..from + n].to_vec();
                let at = self.rng.below(len + 1);
                data.splice(at..at, chunk);
            }
            5 if !pool.is_empty() => {
                let other = &pool[self.rng.below(pool.len())];
                let cut = self.boundary(data);
                let from = self.boundary(other);
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            6 | 7 => {
                let token = self.dictionary[self.rng.below(self.dictionary.len())].clone();
                let at = self.boundary(data);
                if self.rng.one_in(3) && at < len {
                    // Replace what follows instead of pushing it aside.
                    let n = 1 + self.rng.below((len - at).min(token.len().max(1) + 4));
                    data.splice(at..at + n, token);
                } else {
                    data.splice(at..at, token);
                }
            }
            8 => {
                let at = self.boundary(data);
                let n = 200 + self.rng.below(5000);
                let unit: Vec<u8> = if self.rng.one_in(2) {
                    vec![b'a']
                } else {
                    self.dictionary[self.rng.below(self.dictionary.len())].clone()
                };
                let run: Vec<u8> = unit.iter().copied().cycle().take(n).collect();
                data.splice(at..at, run);
            }
            9 => self.edit_lines(data),
            10 if len > 0 => {
                data.truncate(self.rng.below(len));
            }
            _ => {
                // A digit run becomes a number at an edge.
                let edges: [&[u8]; 6] = [
                    b"0",
                    b"-1",
                    b"4294967296",
                    b"18446744073709551616",
                    b"99999999999999999999999",
                    b"1e309",
                ];
                if let Some(start) = data.iter().position(u8::is_ascii_digit) {
                    let end = data[start..]
                        .iter()
                        .position(|b| !b.is_ascii_digit())
                        .map_or(len, |n| start + n);
                    let edge = edges[self.rng.below(edges.len())];
                    data.splice(start..end, edge.iter().copied());
                }
            }
        }
    }

    /// A position in `data`, at a line start half of the time so that tokens land where a key
    /// or a line would begin.
    fn boundary(&mut self, data: &[u8]) -> usize {
        if self.rng.one_in(2) {
            let starts: Vec<usize> = std::iter::once(0)
                .chain(
                    data.iter()
                        .enumerate()
                        .filter(|(_, b)| **b == b'\n')
                        .map(|(i, _)| i + 1),
                )
                .collect();
            starts[self.rng.below(starts.len())]
        } else {
            self.rng.below(data.len() + 1)
        }
    }

    /// Duplicates, drops or swaps whole lines.
    fn edit_lines(&mut self, data: &mut Vec<u8>) {
        let mut lines: Vec<Vec<u8>> = data
            .split_inclusive(|b| *b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        if lines.is_empty() {
            return;
        }
        let a = self.rng.below(lines.len());
        let b = self.rng.below(lines.len());
        match self.rng.below(3) {
            0 => {
                let line = lines[a].clone();
                lines.insert(b, line);
            }
            1 => {
                lines.remove(a);
            }
            _ => lines.swap(a, b),
        }
        *data = lines.concat();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_fixes_the_inputs() {
        let pool = vec![b"[targets.x]\nkind = \"command\"\n".to_vec()];
        let run = |seed| {
            let mut m = Mutator::new(seed, &["deps"], 1024);
            (0..50).map(|_| m.generate(&pool)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(7).iter().all(|input| input.len() <= 1024));
    }

    #[test]
    fn splitmix64_matches_its_reference_output() {
        // The first output of SplitMix64 seeded with 0.
        assert_eq!(Rng::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }
}
