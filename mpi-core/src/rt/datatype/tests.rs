use super::*;

fn b(dt: MPI_Datatype) -> Dtype {
    builtin(dt).unwrap()
}

/// Packs `count` elements of `t` from a buffer whose byte i is i % 251,
/// with the origin at `origin` bytes into the buffer.
fn pack_pattern(t: &Dtype, count: usize, origin: usize) -> Vec<u8> {
    let buf: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
    let mut out = vec![0u8; t.packed_size(count)];
    // SAFETY: the tests keep every run inside the 4096-byte buffer.
    unsafe { t.pack(buf.as_ptr().add(origin), count, &mut out) };
    out
}

fn bytes(ranges: &[(usize, usize)]) -> Vec<u8> {
    ranges.iter().flat_map(|&(o, l)| (o..o + l).map(|i| (i % 251) as u8)).collect()
}

#[test]
fn pair_types_have_padding() {
    let t = b(MPI_DOUBLE_INT);
    assert_eq!((t.size, t.extent, t.contig), (12, 16, false));
    let src: Vec<u8> = (0..32).collect();
    let mut out = vec![0u8; 24];
    // SAFETY: src holds two 16-byte elements.
    unsafe { t.pack(src.as_ptr(), 2, &mut out) };
    assert_eq!(&out[..12], &src[..12]);
    assert_eq!(&out[12..], &src[16..28]);
    let mut back = vec![0u8; 32];
    // SAFETY: back holds two elements.
    unsafe { t.unpack(&out, back.as_mut_ptr()) };
    assert_eq!(&back[16..28], &src[16..28]);
    assert!(b(MPI_INT).contig);
    assert_eq!(b(MPI_2INT).basic_size, 4);
    assert_eq!(b(MPI_2INT).elems(), 2);
    assert_eq!(b(MPI_SHORT_INT).runs(), vec![(0, 2), (4, 4)]);
}

#[test]
fn contiguous_merges_into_one_run() {
    let t = contiguous(10, &b(MPI_INT)).unwrap();
    assert_eq!((t.size, t.lb, t.extent, t.contig), (40, 0, 40, true));
    assert_eq!(t.runs(), vec![(0, 40)]);
    assert_eq!(t.basic, Some(MPI_INT));
    let e = contiguous(0, &b(MPI_INT)).unwrap();
    assert_eq!((e.size, e.extent, e.contig), (0, 0, true));
}

#[test]
fn vector_from_the_standard() {
    // Example 4.6: vector(2, 3, 4) of {(double,0),(char,8)} (extent 16).
    let oldtype = structure(&[(1, 0, Arc::new(b(MPI_DOUBLE))), (1, 8, Arc::new(b(MPI_CHAR)))]).unwrap();
    assert_eq!((oldtype.size, oldtype.extent), (9, 16));
    let t = hvector(2, 3, 4 * 16, &oldtype).unwrap();
    assert_eq!(t.size, 54);
    assert_eq!(t.extent, 64 + 48);
    assert_eq!(t.runs(), vec![(0, 9), (16, 9), (32, 9), (64, 9), (80, 9), (96, 9)]);
    assert_eq!(t.elems(), 12);
    // A big vector stays one strided node.
    let v = hvector(1_000_000, 1, 16, &b(MPI_DOUBLE)).unwrap();
    assert_eq!((v.size, v.extent, v.run_count()), (8_000_000, 16 * 999_999 + 8, 1_000_000));
    assert!(matches!(v.node.kind, Kind::Rep { count: 1_000_000, stride: 16, .. }));
    // Negative stride.
    let n = hvector(3, 1, -8, &b(MPI_INT)).unwrap();
    assert_eq!((n.lb, n.extent, n.true_lb), (-16, 20, -16));
    assert_eq!(n.runs(), vec![(0, 4), (-8, 4), (-16, 4)]);
}

#[test]
fn vector_pack_and_partial_unpack() {
    let t = hvector(3, 2, 32, &b(MPI_INT)).unwrap();
    let packed = pack_pattern(&t, 2, 0);
    let ext = t.extent as usize;
    let want = bytes(&[(0, 8), (32, 8), (64, 8), (ext, 8), (ext + 32, 8), (ext + 64, 8)]);
    assert_eq!(packed, want);
    // Unpack 30 of the 48 bytes.
    let mut back = vec![0u8; 256];
    // SAFETY: back holds two elements.
    unsafe { t.unpack(&packed[..30], back.as_mut_ptr()) };
    assert_eq!(&back[0..8], &packed[0..8]);
    assert_eq!(&back[64..72], &packed[16..24]);
    assert_eq!(&back[ext..ext + 6], &packed[24..30]);
    assert_eq!(back[ext + 6], 0);
    // A range in the middle.
    let mut mid = vec![0u8; 20];
    let buf: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
    // SAFETY: the pattern buffer holds both elements.
    unsafe { t.pack_range(buf.as_ptr(), 2, 13, &mut mid) };
    assert_eq!(&mid[..], &packed[13..33]);
}

#[test]
fn indexed_from_the_standard() {
    // Example 4.7: indexed(2, {3,1}, {4,0}) of the (double, char) type.
    let oldtype = structure(&[(1, 0, Arc::new(b(MPI_DOUBLE))), (1, 8, Arc::new(b(MPI_CHAR)))]).unwrap();
    let t = hindexed(&[(3, 64), (1, 0)], &oldtype).unwrap();
    assert_eq!(t.runs(), vec![(64, 9), (80, 9), (96, 9), (0, 9)]);
    assert_eq!((t.lb, t.extent, t.size), (0, 112, 36));
    // Adjacent blocks merge.
    let m = hindexed(&[(2, 0), (3, 8), (1, 40)], &b(MPI_INT)).unwrap();
    assert_eq!(m.runs(), vec![(0, 20), (40, 4)]);
}

#[test]
fn struct_alignment_and_markers() {
    // Example 4.8-like: {(float,0),(float,4),(double,8),(char,16),(char,17),(char,18)}
    let f = Arc::new(b(MPI_FLOAT));
    let d = Arc::new(b(MPI_DOUBLE));
    let c = Arc::new(b(MPI_CHAR));
    let t = structure(&[(2, 0, f), (1, 8, d), (3, 16, c.clone())]).unwrap();
    assert_eq!((t.size, t.extent, t.true_extent), (19, 24, 19));
    assert_eq!(t.runs(), vec![(0, 19)]);
    assert!(!t.contig);
    assert_eq!(t.basic, None);
    // MPI_LB/MPI_UB markers set the bounds explicitly.
    let lb = Arc::new(b(MPI_LB));
    let ub = Arc::new(b(MPI_UB));
    let m = structure(&[(1, -8, lb), (1, 0, Arc::new(b(MPI_INT))), (1, 32, ub)]).unwrap();
    assert_eq!((m.lb, m.extent, m.true_lb, m.true_extent), (-8, 40, 0, 4));
    // Markers survive in a containing type and win over the data.
    let c2 = contiguous(2, &m).unwrap();
    assert_eq!((c2.lb, c2.extent), (-8, 80));
    assert_eq!(c2.runs(), vec![(0, 4), (40, 4)]);
    let s2 = structure(&[(1, 0, Arc::new(m)), (1, 100, Arc::new(b(MPI_CHAR)))]).unwrap();
    assert_eq!((s2.lb, s2.extent), (-8, 40));
    // Only markers: the missing bound is 0, as MPICH has it.
    let only_lb = structure(&[(1, 8, Arc::new(b(MPI_LB)))]).unwrap();
    assert_eq!((only_lb.lb, only_lb.extent, only_lb.size), (8, -8, 0));
    let only_lb0 = structure(&[(1, 0, Arc::new(b(MPI_LB)))]).unwrap();
    assert_eq!((only_lb0.lb, only_lb0.extent), (0, 0));
    let only_ub = structure(&[(1, 8, Arc::new(b(MPI_UB)))]).unwrap();
    assert_eq!((only_ub.lb, only_ub.extent), (0, 8));
}

#[test]
fn resized_types_in_arrays() {
    let r = b(MPI_INT).resized(0, 12).unwrap();
    assert_eq!((r.size, r.extent, r.contig), (4, 12, false));
    let c = contiguous(3, &r).unwrap();
    assert_eq!(c.runs(), vec![(0, 4), (12, 4), (24, 4)]);
    assert_eq!(c.extent, 36);
    let packed = pack_pattern(&r, 3, 0);
    assert_eq!(packed, bytes(&[(0, 4), (12, 4), (24, 4)]));
    // A type resized to its own size is contiguous again.
    assert!(b(MPI_DOUBLE_INT).resized(0, 12).unwrap().contig);
    assert!(!b(MPI_SHORT_INT).resized(0, 6).unwrap().contig);
    let q = hvector(2, 1, 8, &b(MPI_DOUBLE)).unwrap().resized(0, 16).unwrap();
    assert!(q.contig);
}

#[test]
fn subarray_c_and_fortran_order() {
    // 4x5 ints, the 2x3 block at (1,2).
    let t = subarray(&[4, 5], &[2, 3], &[1, 2], MPI_ORDER_C, &b(MPI_INT)).unwrap();
    assert_eq!((t.lb, t.extent, t.size), (0, 80, 24));
    assert_eq!(t.runs(), vec![((5 + 2) * 4, 12), ((2 * 5 + 2) * 4, 12)]);
    assert_eq!((t.true_lb, t.true_extent), (28, 60 - 28));
    // Fortran order: dimension 0 varies fastest.
    let f = subarray(&[4, 5], &[2, 3], &[1, 2], MPI_ORDER_FORTRAN, &b(MPI_INT)).unwrap();
    assert_eq!(f.runs(), vec![((2 * 4 + 1) * 4, 8), ((3 * 4 + 1) * 4, 8), ((4 * 4 + 1) * 4, 8)]);
    // 3-D.
    let s = subarray(&[3, 4, 5], &[2, 2, 2], &[1, 1, 1], MPI_ORDER_C, &b(MPI_CHAR)).unwrap();
    assert_eq!(s.runs(), vec![(26, 2), (31, 2), (46, 2), (51, 2)]);
    assert_eq!(s.extent, 60);
    assert!(subarray(&[4], &[5], &[0], MPI_ORDER_C, &b(MPI_INT)).is_err());
    assert!(subarray(&[4], &[2], &[3], MPI_ORDER_C, &b(MPI_INT)).is_err());
    assert!(subarray(&[4], &[2], &[0], 99, &b(MPI_INT)).is_err());
}

/// Global indices (row-major, C order) of the elements a darray covers.
fn darray_elems(t: &Dtype) -> Vec<usize> {
    t.runs().iter().flat_map(|&(o, l)| o as usize / 4..(o as usize + l) / 4).collect()
}

#[test]
fn darray_block_cyclic() {
    let i = b(MPI_INT);
    // 1-D, 10 elements, block over 3 procs: 4,4,2.
    let t = darray(3, 2, &[10], &[MPI_DISTRIBUTE_BLOCK], &[MPI_DISTRIBUTE_DFLT_DARG], &[3], MPI_ORDER_C, &i).unwrap();
    assert_eq!(darray_elems(&t), vec![8, 9]);
    assert_eq!((t.lb, t.extent), (0, 40));
    // Cyclic(2) over 3 procs, rank 1: 2,3, 8,9.
    let c = darray(3, 1, &[10], &[MPI_DISTRIBUTE_CYCLIC], &[2], &[3], MPI_ORDER_C, &i).unwrap();
    assert_eq!(darray_elems(&c), vec![2, 3, 8, 9]);
    // Cyclic(3) over 2 procs, rank 1, 10 elements: 3,4,5, 9 (short last block).
    let c = darray(2, 1, &[10], &[MPI_DISTRIBUTE_CYCLIC], &[3], &[2], MPI_ORDER_C, &i).unwrap();
    assert_eq!(darray_elems(&c), vec![3, 4, 5, 9]);
    // 2-D 4x6: rows block over 2, columns cyclic(1) over 3; rank 4 = (1, 1).
    let g = darray(
        6,
        4,
        &[4, 6],
        &[MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC],
        &[MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG],
        &[2, 3],
        MPI_ORDER_C,
        &i,
    )
    .unwrap();
    assert_eq!(darray_elems(&g), vec![2 * 6 + 1, 2 * 6 + 4, 3 * 6 + 1, 3 * 6 + 4]);
    assert_eq!(g.extent, 96);
    // Fortran order: the same elements, column-major positions, in
    // column-major type-map order.
    let f = darray(
        6,
        4,
        &[4, 6],
        &[MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC],
        &[MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG],
        &[2, 3],
        MPI_ORDER_FORTRAN,
        &i,
    )
    .unwrap();
    assert_eq!(darray_elems(&f), vec![4 + 2, 4 + 3, 4 * 4 + 2, 4 * 4 + 3]);
    // NONE with 1 proc; rank with nothing (block 4 over 4 procs of 3 elements... )
    let e = darray(4, 3, &[3], &[MPI_DISTRIBUTE_BLOCK], &[MPI_DISTRIBUTE_DFLT_DARG], &[4], MPI_ORDER_C, &i).unwrap();
    assert_eq!((e.size, e.extent), (0, 12));
    // Errors.
    let bad = |d, a, p| darray(2, 0, &[10], &[d], &[a], &[p], MPI_ORDER_C, &i).is_err();
    assert!(bad(MPI_DISTRIBUTE_NONE, 0, 2));
    assert!(bad(MPI_DISTRIBUTE_BLOCK, 3, 2));
    assert!(bad(MPI_DISTRIBUTE_CYCLIC, 0, 2));
    assert!(bad(MPI_DISTRIBUTE_CYCLIC, 1, 3));
    assert!(bad(77, 1, 2));
}

#[test]
fn big_cyclic_darray_stays_compact() {
    let t = darray(2, 1, &[1_000_001], &[MPI_DISTRIBUTE_CYCLIC], &[1], &[2], MPI_ORDER_C, &b(MPI_DOUBLE)).unwrap();
    assert_eq!(t.size, 500_000 * 8);
    assert!(matches!(t.node.kind, Kind::Rep { .. }));
    assert_eq!(t.runs()[..2], [(8, 8), (24, 8)]);
}

#[test]
fn elements_of_partial_messages() {
    let s = structure(&[(1, 0, Arc::new(b(MPI_INT))), (2, 8, Arc::new(b(MPI_DOUBLE)))]).unwrap();
    assert_eq!(s.size, 20);
    assert_eq!(s.elements_in(40), Some(6));
    assert_eq!(s.elements_in(24), Some(4));
    assert_eq!(s.elements_in(32), Some(5));
    assert_eq!(s.elements_in(30), None);
    assert_eq!((s.whole_elements_in(30), s.whole_elements_in(32)), (4, 5));
    assert_eq!(s.bytes_of_elements(5), 32);
    let v = hvector(1000, 1, 16, &s).unwrap();
    assert_eq!(v.elements_in(20 * 500 + 12), Some(1502));
}

#[test]
fn external32_conversions() {
    let t = structure(&[(1, 0, Arc::new(b(MPI_INT))), (1, 8, Arc::new(b(MPI_LONG))), (1, 16, Arc::new(b(MPI_DOUBLE)))])
        .unwrap();
    assert_eq!(t.ext_size(1), 16);
    let mut native = vec![];
    native.extend_from_slice(&0x01020304i32.to_le_bytes());
    native.extend_from_slice(&(-2i64).to_le_bytes());
    native.extend_from_slice(&1.5f64.to_le_bytes());
    let mut ext = vec![0u8; 16];
    t.native_to_ext(&native, 1, &mut ext);
    assert_eq!(&ext[..4], &[1, 2, 3, 4]);
    assert_eq!(&ext[4..8], &[0xff, 0xff, 0xff, 0xfe]);
    assert_eq!(&ext[8..], &1.5f64.to_be_bytes());
    let mut back = vec![0u8; 20];
    t.ext_to_native(&ext, 1, &mut back);
    assert_eq!(back, native);
    // long double 1.0 -> quad 0x3fff0000...
    let ld = b(MPI_LONG_DOUBLE);
    let mut x = [0u8; 16];
    x[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
    x[8..10].copy_from_slice(&0x3fffu16.to_le_bytes());
    let mut q = [0u8; 16];
    ld.native_to_ext(&x, 1, &mut q);
    assert_eq!(q[..2], [0x3f, 0xff]);
    assert!(q[2..].iter().all(|&b| b == 0));
    let mut y = [0u8; 16];
    ld.ext_to_native(&q, 1, &mut y);
    assert_eq!(x, y);
}

#[test]
fn table_commit_free_names() {
    let mut tt = TypeTable::default();
    let h = tt.insert(contiguous(2, &b(MPI_INT)).unwrap());
    assert_eq!(tt.get(h).unwrap_err().class, MPI_ERR_TYPE);
    assert!(tt.lookup(h).is_ok());
    tt.commit(h).unwrap();
    assert_eq!(tt.get(h).unwrap().size, 8);
    assert_eq!(tt.name(MPI_DOUBLE).unwrap(), "MPI_DOUBLE");
    tt.set_name(h, "pair".into()).unwrap();
    assert_eq!(tt.name(h).unwrap(), "pair");
    tt.free(h).unwrap();
    assert!(tt.get(h).is_err());
    assert!(tt.free(MPI_INT).is_err());
    assert!(tt.get(MPI_DATATYPE_NULL).is_err());
    assert!(tt.get(0x4c0004ff).is_err());
    assert_eq!(tt.get(MPI_FLOAT_INT).unwrap().size, 8);
    for h in predefined_handles() {
        let t = tt.get(h).unwrap();
        assert_eq!(t.named, Some(h));
        if h != MPI_LB && h != MPI_UB {
            assert_eq!(t.size, builtin_type_size(h).unwrap(), "size of {h:x}");
        }
    }
}

/// Bytes that tell every position apart (period 251).
fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + seed) % 251) as u8).collect()
}

/// A row copy: `strided_copy` or one of the kernels behind it.
type RowCopy = unsafe fn(bool, *mut u8, isize, usize, usize, *mut u8);

/// Copies `n` rows of `len` bytes between a strided side and a packed
/// one with `copy` and checks every byte of both buffers against a
/// row-by-row reference (bytes outside the rows keep their values).
fn check_rows(copy: RowCopy, len: usize, n: usize, stride: isize, shift: usize, pshift: usize) {
    // The strided side: rows at base + i * stride, base far enough in
    // for a negative stride; `shift` and `pshift` misalign both sides.
    let span = n.saturating_sub(1) * stride.unsigned_abs() + len;
    let base = if stride < 0 { span - len } else { 0 } + shift;
    let row = |i: usize| (base as isize + i as isize * stride) as usize;
    for gather in [true, false] {
        let mut strided = pattern(span + shift + 64, 1);
        let mut packed = pattern(n * len + pshift + 64, 2);
        let (mut want_s, mut want_p) = (strided.clone(), packed.clone());
        for i in 0..n {
            let (r, p) = (row(i), pshift + i * len);
            if gather {
                want_p[p..p + len].copy_from_slice(&strided[r..r + len]);
            } else {
                want_s[r..r + len].copy_from_slice(&packed[p..p + len]);
            }
        }
        // SAFETY: every row lies in `strided`, the packed rows in
        // `packed`; separate vectors.
        unsafe { copy(gather, strided.as_mut_ptr().add(base), stride, n, len, packed.as_mut_ptr().add(pshift)) };
        let what = format!("gather {gather} len {len} n {n} stride {stride} shifts {shift}/{pshift}");
        assert!(strided == want_s, "strided side, {what}");
        assert!(packed == want_p, "packed side, {what}");
    }
}

#[test]
fn row_copies_of_odd_sizes_and_alignments() {
    let mut copies: Vec<(&str, RowCopy)> = vec![("strided_copy", strided_copy)];
    #[cfg(target_arch = "x86_64")]
    {
        // Both prefetch hints (the write hint only where the CPU has it).
        let pfw = rows::has_prefetchw();
        // SAFETY: check_rows passes valid, separate sides; SSE2 is part of
        // x86-64.
        copies.push(("sse2", |g, s, st, n, l, p| unsafe { rows::sse2(g, false, s, st, n, l, p) }));
        if pfw {
            // SAFETY: as for "sse2", and the CPU has PREFETCHW (`pfw`).
            copies.push(("sse2_pfw", |g, s, st, n, l, p| unsafe { rows::sse2(g, true, s, st, n, l, p) }));
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as for "sse2", and the CPU has AVX2 (just checked).
            copies.push(("avx2", |g, s, st, n, l, p| unsafe { rows::avx2(g, false, s, st, n, l, p) }));
            if pfw {
                // SAFETY: as for "avx2", and the CPU has PREFETCHW (`pfw`).
                copies.push(("avx2_pfw", |g, s, st, n, l, p| unsafe { rows::avx2(g, true, s, st, n, l, p) }));
            }
        }
    }
    for (name, copy) in copies {
        for len in [ROW_MIN, 129, 200, 255, 256, 1000, 4095, 4096, 4097, ROW_MAX, ROW_MAX + 1] {
            for n in [0, 1, 2, 5] {
                let l = len as isize;
                for stride in [l + 1, 2 * l + 3, -l - 7] {
                    for (shift, pshift) in [(0, 0), (1, 5), (3, 0), (0, 63)] {
                        if name != "strided_copy" && len > ROW_MAX {
                            continue;
                        }
                        check_rows(copy, len, n, stride, shift, pshift);
                    }
                }
            }
        }
    }
}

#[test]
fn vector_of_long_rows_packs_whole_and_in_ranges() {
    // 260 rows of 200 bytes, 333 apart (more rows than EXPAND_LIMIT: a
    // repetition node, so whole rows go through the row kernel and the
    // rows a range starts or ends inside are single runs).
    let (rows, len, stride) = (260, 200, 333);
    let t = hvector(rows, len, stride as isize, &b(MPI_BYTE)).unwrap();
    let ext = t.extent as usize;
    let buf = pattern(3 * ext + 8, 3);
    let mut runs = Vec::new();
    for e in 0..3 {
        for r in 0..rows {
            runs.push((e * ext + r * stride, len));
        }
    }
    let want: Vec<u8> = runs.iter().flat_map(|&(o, l)| buf[o..o + l].to_vec()).collect();
    for count in [0, 1, 3] {
        let mut out = vec![0u8; t.packed_size(count)];
        // SAFETY: buf holds three elements.
        unsafe { t.pack(buf.as_ptr(), count, &mut out) };
        assert!(out == want[..count * rows * len], "pack of {count} elements");
        let mut back = vec![0u8; buf.len()];
        // SAFETY: back holds three elements.
        unsafe { t.unpack(&out, back.as_mut_ptr()) };
        let mut expect = vec![0u8; buf.len()];
        for &(o, l) in &runs[..count * rows] {
            expect[o..o + l].copy_from_slice(&buf[o..o + l]);
        }
        assert!(back == expect, "unpack of {count} elements");
    }
    let total = 3 * rows * len;
    for (skip, n) in [(0, total), (1, total - 1), (199, 602), (150, 52_000), (52_000, 1), (total - 300, 300)] {
        let mut out = vec![0u8; n];
        // SAFETY: buf holds three elements; the range lies in the packed form.
        unsafe { t.pack_range(buf.as_ptr(), 3, skip, &mut out) };
        assert!(out == want[skip..skip + n], "pack range {skip}+{n}");
        let mut back = vec![0u8; buf.len()];
        // SAFETY: as above.
        unsafe { t.unpack_range(&want[skip..skip + n], skip, back.as_mut_ptr()) };
        let mut again = vec![0u8; n];
        // SAFETY: back holds three elements.
        unsafe { t.pack_range(back.as_ptr(), 3, skip, &mut again) };
        assert!(again == want[skip..skip + n], "unpack range {skip}+{n}");
    }
}
