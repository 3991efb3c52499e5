//! Communication matrix: point-to-point bytes and messages between every
//! pair of ranks, counted at the sender (every send to a valid rank,
//! matched or not; `MPI_PROC_NULL` excluded).

use serde::{Deserialize, Serialize};

use crate::model::Model;

/// Dense `n x n` matrices, row = sender, column = receiver.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub ranks: usize,
    /// `bytes[src * ranks + dst]`.
    pub bytes: Vec<i64>,
    pub messages: Vec<u64>,
}

/// A pair of ranks and what went between them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub src: i32,
    pub dst: i32,
    pub bytes: i64,
    pub messages: u64,
}

impl Matrix {
    pub fn bytes(&self, src: usize, dst: usize) -> i64 {
        self.bytes[src * self.ranks + dst]
    }
    pub fn messages(&self, src: usize, dst: usize) -> u64 {
        self.messages[src * self.ranks + dst]
    }
    /// The `k` pairs with the most bytes.
    pub fn top(&self, k: usize) -> Vec<Pair> {
        let mut v: Vec<Pair> = (0..self.ranks * self.ranks)
            .filter(|&i| self.messages[i] > 0)
            .map(|i| Pair {
                src: (i / self.ranks) as i32,
                dst: (i % self.ranks) as i32,
                bytes: self.bytes[i],
                messages: self.messages[i],
            })
            .collect();
        v.sort_by(|a, b| {
            b.bytes.cmp(&a.bytes).then(b.messages.cmp(&a.messages)).then((a.src, a.dst).cmp(&(b.src, b.dst)))
        });
        v.truncate(k);
        v
    }
}

/// Builds the matrix.
pub fn matrix(m: &Model) -> Matrix {
    let n = m.ranks.len();
    let mut out = Matrix { ranks: n, bytes: vec![0; n * n], messages: vec![0; n * n] };
    for r in &m.ranks {
        let row = r.rank as usize * n;
        for s in &r.sends {
            if s.peer >= 0 && (s.peer as usize) < n {
                out.bytes[row + s.peer as usize] += s.bytes.max(0);
                out.messages[row + s.peer as usize] += 1;
            }
        }
    }
    out
}
