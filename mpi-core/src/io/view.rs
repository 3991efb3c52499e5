//! File views (section 13.3 of the standard): where the data a process sees
//! lies in the file.
//!
//! A view is a displacement, an etype and a filetype. The filetype is tiled
//! from the displacement on, copy `t` starting `t * extent` bytes further;
//! its data bytes, in type-map order, form the process's stream of data.
//! Offsets and file pointers count etypes of that stream. This module maps
//! stream bytes to file byte ranges and back; it does no I/O.

use std::sync::Arc;

use mpi_api::abi::*;

use crate::bail;
use crate::rt::datatype::Dtype;
use crate::rt::error::MpiResult;

/// The view of one process.
#[derive(Clone, Debug)]
pub struct FileView {
    /// Absolute byte position where the view begins.
    pub disp: i64,
    pub etype: Arc<Dtype>,
    pub filetype: Arc<Dtype>,
    pub datarep: String,
    /// Data runs `(offset, len)` of one filetype copy, relative to the copy's
    /// origin, in type-map order (merged where they touch).
    runs: Vec<(i64, i64)>,
    /// Data bytes before each run.
    before: Vec<i64>,
    /// Data bytes of one filetype copy.
    size: i64,
    /// Extent of the filetype (distance between copies).
    extent: i64,
}

/// A byte range of the file: `(absolute offset, length)`.
pub type Segment = (i64, usize);

impl FileView {
    /// The view every file starts with: a stream of bytes from offset 0.
    pub fn bytes(byte: Arc<Dtype>) -> FileView {
        FileView::new(0, byte.clone(), byte, "native", false).expect("the byte view is valid")
    }

    /// Checks and builds a view. `writable`: the file is open for writing,
    /// so the filetype may not overlap itself.
    pub fn new(
        disp: i64,
        etype: Arc<Dtype>,
        filetype: Arc<Dtype>,
        datarep: &str,
        writable: bool,
    ) -> MpiResult<FileView> {
        if disp < 0 {
            bail!(MPI_ERR_ARG, "displacement {disp} is negative");
        }
        if etype.size == 0 {
            bail!(MPI_ERR_TYPE, "the etype holds no data");
        }
        if filetype.size == 0 || filetype.extent <= 0 {
            bail!(MPI_ERR_TYPE, "the filetype holds no data or has a non-positive extent ({})", filetype.extent);
        }
        if !filetype.size.is_multiple_of(etype.size) {
            bail!(
                MPI_ERR_TYPE,
                "the filetype ({} bytes of data) is not made of whole etypes ({} bytes each)",
                filetype.size,
                etype.size
            );
        }
        let raw = if filetype.contig { vec![(0isize, filetype.size)] } else { filetype.runs() };
        let mut runs = Vec::with_capacity(raw.len());
        let mut before = Vec::with_capacity(raw.len());
        let mut acc = 0i64;
        let mut prev_end = 0i64;
        for (i, &(o, l)) in raw.iter().enumerate() {
            let (o, l) = (o as i64, l as i64);
            if o < 0 {
                bail!(MPI_ERR_TYPE, "the filetype has a negative displacement ({o})");
            }
            if i > 0 {
                let (po, _) = runs[i - 1];
                if o < po {
                    bail!(MPI_ERR_TYPE, "the filetype's displacements decrease ({o} after {po})");
                }
                if writable && o < prev_end {
                    bail!(MPI_ERR_TYPE, "the filetype overlaps itself (not allowed on a file open for writing)");
                }
            }
            prev_end = prev_end.max(o + l);
            runs.push((o, l));
            before.push(acc);
            acc += l;
        }
        if writable && !runs.is_empty() && prev_end > filetype.extent as i64 + runs[0].0 {
            // Consecutive copies of the filetype would overlap.
            bail!(
                MPI_ERR_TYPE,
                "copies of the filetype overlap (data reaches byte {prev_end}, extent {})",
                filetype.extent
            );
        }
        Ok(FileView {
            disp,
            etype,
            datarep: datarep.to_string(),
            runs,
            before,
            size: filetype.size as i64,
            extent: filetype.extent as i64,
            filetype,
        })
    }

    /// Bytes of one etype.
    pub fn esize(&self) -> i64 {
        self.etype.size as i64
    }

    /// Whether the data of the view is one contiguous stream from `disp`.
    fn dense(&self) -> bool {
        self.runs.len() == 1 && self.runs[0] == (0, self.extent)
    }

    /// Absolute file position of data byte `d` of the stream.
    pub fn byte_position(&self, d: i64) -> i64 {
        if self.dense() {
            return self.disp + d;
        }
        let (t, w) = (d / self.size, d % self.size);
        let k = self.run_of(w);
        self.disp + t * self.extent + self.runs[k].0 + (w - self.before[k])
    }

    /// Index of the run holding data byte `w` of one copy (`w < size`).
    fn run_of(&self, w: i64) -> usize {
        self.before.partition_point(|&b| b <= w) - 1
    }

    /// The file ranges holding stream bytes `[start, start + len)`, in
    /// stream order, adjacent ranges merged.
    pub fn segments(&self, start: i64, len: i64) -> Vec<Segment> {
        let mut out: Vec<Segment> = Vec::new();
        if len <= 0 {
            return out;
        }
        let mut push = |o: i64, l: i64| match out.last_mut() {
            Some(last) if last.0 + last.1 as i64 == o => last.1 += l as usize,
            _ => out.push((o, l as usize)),
        };
        if self.dense() {
            push(self.disp + start, len);
            return out;
        }
        let (mut t, mut w) = (start / self.size, start % self.size);
        let mut k = self.run_of(w);
        let mut left = len;
        while left > 0 {
            let (o, l) = self.runs[k];
            let within = w - self.before[k];
            let n = (l - within).min(left);
            push(self.disp + t * self.extent + o + within, n);
            left -= n;
            w += n;
            k += 1;
            if k == self.runs.len() {
                k = 0;
                w = 0;
                t += 1;
            }
        }
        out
    }

    /// Stream bytes that lie before file position `size` (how much of the
    /// view a file of `size` bytes holds).
    fn bytes_before(&self, size: i64) -> i64 {
        if size <= self.disp {
            return 0;
        }
        let span = size - self.disp;
        let (full, rem) = (span / self.extent, span % self.extent);
        let part: i64 = self.runs.iter().map(|&(o, l)| (rem - o).clamp(0, l)).sum();
        // Runs past the extent (a filetype resized smaller than its data)
        // belong to later copies too; the plain count is close enough for
        // such views, and exact for every other.
        full * self.size + part
    }

    /// End of file in this view: the offset (in etypes) of the first etype
    /// that starts at or after byte `size` of the file.
    pub fn eof_offset(&self, size: i64) -> i64 {
        let d = self.bytes_before(size);
        (d + self.esize() - 1) / self.esize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::datatype::{builtin, hvector};

    fn byte() -> Arc<Dtype> {
        Arc::new(builtin(MPI_BYTE).unwrap())
    }
    fn int() -> Arc<Dtype> {
        Arc::new(builtin(MPI_INT).unwrap())
    }

    #[test]
    fn byte_view_is_the_file() {
        let v = FileView::bytes(byte());
        assert_eq!(v.segments(10, 5), vec![(10, 5)]);
        assert_eq!(v.byte_position(7), 7);
        assert_eq!(v.eof_offset(100), 100);
    }

    #[test]
    fn strided_view_maps_each_block() {
        // Rank 1 of 3: one int in every three, from displacement 8.
        let ft = hvector(1, 1, 0, &int()).unwrap();
        let ft = Arc::new(ft.resized(0, 12).unwrap());
        let v = FileView::new(8 + 4, int(), ft, "native", true).unwrap();
        assert_eq!(v.segments(0, 12), vec![(12, 4), (24, 4), (36, 4)]);
        assert_eq!(v.segments(6, 4), vec![(26, 2), (36, 2)]);
        assert_eq!(v.byte_position(8), 36);
        // A 30-byte file holds the ints at 12 and 24 (the second one partly).
        assert_eq!(v.eof_offset(30), 2);
        assert_eq!(v.eof_offset(24), 1);
        assert_eq!(v.eof_offset(5), 0);
    }

    #[test]
    fn vector_view_merges_adjacent_ranges() {
        // Two blocks of two ints, stride 3 ints: runs (0,8) and (12,8).
        let ft = Arc::new(hvector(2, 2, 12, &int()).unwrap());
        let v = FileView::new(0, int(), ft, "native", true).unwrap();
        // Copies 20 bytes apart: the second run of copy 0 touches copy 1.
        assert_eq!(v.segments(0, 32), vec![(0, 8), (12, 16), (32, 8)]);
        assert_eq!(v.eof_offset(16), 3);
    }

    #[test]
    fn bad_views_are_refused() {
        let ft = Arc::new(hvector(2, 1, 2, &byte()).unwrap());
        // Filetype of 2 bytes with an etype of 4.
        assert_eq!(FileView::new(0, int(), ft, "native", false).unwrap_err().class, MPI_ERR_TYPE);
        assert_eq!(FileView::new(-1, byte(), byte(), "native", false).unwrap_err().class, MPI_ERR_ARG);
        // Decreasing displacements.
        let down = Arc::new(hvector(2, 1, -4, &int()).unwrap());
        assert_eq!(FileView::new(0, int(), down, "native", false).unwrap_err().class, MPI_ERR_TYPE);
    }
}
