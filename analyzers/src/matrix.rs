//! Communication matrix: point-to-point bytes and messages between every
//! pair of ranks, counted at the sender (every send to a valid rank,
//! matched or not; `MPI_PROC_NULL` excluded).
//!
//! The matrix is sparse: only the pairs that communicated are kept, so its
//! size follows the sends of the trace, not the square of its rank count
//! (the rank count comes from `meta.json`, which may claim up to 2^20 ranks
//! of which a handful left files; a dense matrix of them would be 16 TB).
//! [`Matrix::dense`] gives the row-major tables of a small matrix (the
//! report's `full`).

use serde::{Deserialize, Serialize};

use crate::model::Model;

/// The pairs of ranks that communicated, row = sender, column = receiver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub ranks: usize,
    /// Sorted by `(src, dst)`, each pair once, every one with messages.
    pub pairs: Vec<Pair>,
}

/// A pair of ranks and what went between them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub src: i32,
    pub dst: i32,
    pub bytes: i64,
    pub messages: u64,
}

/// A small matrix as dense row-major tables (the report's `full`, whose
/// JSON shape predates the sparse [`Matrix`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DenseMatrix {
    pub ranks: usize,
    /// `bytes[src * ranks + dst]`.
    pub bytes: Vec<i64>,
    pub messages: Vec<u64>,
}

impl DenseMatrix {
    pub fn bytes(&self, src: usize, dst: usize) -> i64 {
        self.bytes.get(src * self.ranks + dst).copied().unwrap_or(0)
    }
    pub fn messages(&self, src: usize, dst: usize) -> u64 {
        self.messages.get(src * self.ranks + dst).copied().unwrap_or(0)
    }
}

impl Matrix {
    /// The pair `src -> dst`, if they communicated.
    pub fn pair(&self, src: usize, dst: usize) -> Option<&Pair> {
        let key = (src as i64, dst as i64);
        self.pairs.binary_search_by_key(&key, |p| (p.src as i64, p.dst as i64)).ok().map(|i| &self.pairs[i])
    }
    pub fn bytes(&self, src: usize, dst: usize) -> i64 {
        self.pair(src, dst).map_or(0, |p| p.bytes)
    }
    pub fn messages(&self, src: usize, dst: usize) -> u64 {
        self.pair(src, dst).map_or(0, |p| p.messages)
    }
    /// Bytes of all pairs.
    pub fn total_bytes(&self) -> i64 {
        self.pairs.iter().map(|p| p.bytes).fold(0, i64::saturating_add)
    }
    /// Messages of all pairs.
    pub fn total_messages(&self) -> u64 {
        self.pairs.iter().map(|p| p.messages).sum()
    }
    /// The `k` pairs with the most bytes.
    pub fn top(&self, k: usize) -> Vec<Pair> {
        let mut v = self.pairs.clone();
        v.sort_by(|a, b| {
            b.bytes.cmp(&a.bytes).then(b.messages.cmp(&a.messages)).then((a.src, a.dst).cmp(&(b.src, b.dst)))
        });
        v.truncate(k);
        v
    }
    /// The dense tables, when there are at most `max_ranks` ranks (they
    /// take `16 * ranks^2` bytes).
    pub fn dense(&self, max_ranks: usize) -> Option<DenseMatrix> {
        let n = self.ranks;
        if n > max_ranks {
            return None;
        }
        let mut out = DenseMatrix { ranks: n, bytes: vec![0; n * n], messages: vec![0; n * n] };
        for p in self.pairs.iter().filter(|p| (p.src as usize) < n && (p.dst as usize) < n) {
            let i = p.src as usize * n + p.dst as usize;
            out.bytes[i] = p.bytes;
            out.messages[i] = p.messages;
        }
        Some(out)
    }
}

/// Builds the matrix.
pub fn matrix(m: &Model) -> Matrix {
    let n = m.ranks.len();
    let mut out = Matrix { ranks: n, pairs: Vec::new() };
    // Per sender, its sends to valid ranks sorted by receiver and summed:
    // memory follows the sends, never the rank count squared.
    let mut to: Vec<(u32, i64)> = Vec::new();
    for r in &m.ranks {
        to.clear();
        to.extend(
            r.sends.iter().filter(|s| s.peer >= 0 && (s.peer as usize) < n).map(|s| (s.peer as u32, s.bytes.max(0))),
        );
        to.sort_unstable_by_key(|&(dst, _)| dst);
        for &(dst, bytes) in &to {
            match out.pairs.last_mut() {
                Some(p) if p.src == r.rank && p.dst == dst as i32 => {
                    p.bytes = p.bytes.saturating_add(bytes);
                    p.messages += 1;
                }
                _ => out.pairs.push(Pair { src: r.rank, dst: dst as i32, bytes, messages: 1 }),
            }
        }
    }
    // Ranks are in order in the model (rank r at index r), so the pairs
    // are sorted already; sorting again costs nothing then and keeps the
    // order `pair` relies on whatever the model.
    out.pairs.sort_by_key(|p| (p.src, p.dst));
    out
}
