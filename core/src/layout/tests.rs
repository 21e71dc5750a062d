use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn shape_strategy() -> impl Strategy<Value = (Vec<i64>, u32, i64)> {
    (0u32..6, 0u32..14, prop::sample::select(vec![2u32, 4]), prop::sample::select(vec![1i64, 2, 4, 8, 16]))
        .prop_map(|(r, c, b, w)| (vec![1i64 << r, 1i64 << c], b, w))
}

/// Every element is held by some thread; a thread holds each of its elements once; the
/// threads that hold an element are exactly those that differ from one holder in the
/// replicated lane and warp bits.
fn check_cover(l: &LinearLayout) -> Result<(), TestCaseError> {
    prop_assert!(l.check().is_ok(), "{:?}: {}", l, l.check().unwrap_err());
    let total: i64 = l.shape.iter().product();
    let (rep_l, rep_w) = (l.replicated_lanes(), l.replicated_warps());
    let mut owners: BTreeMap<Vec<i64>, Vec<(i64, i64, i64)>> = BTreeMap::new();
    for w in 0..l.num_warps() {
        for lane in 0..32 {
            let mut seen = std::collections::BTreeSet::new();
            for r in 0..l.num_regs() {
                let c = l.coord(w, lane, r);
                prop_assert!(c.iter().zip(&l.shape).all(|(x, s)| *x < *s), "{c:?} outside {:?}", l.shape);
                prop_assert!(seen.insert(c.clone()), "thread ({w}, {lane}) holds {c:?} twice");
                owners.entry(c).or_default().push((w, lane, r));
            }
        }
    }
    prop_assert_eq!(owners.len() as i64, total);
    let copies = (1i64 << rep_l.count_ones()) * (1i64 << rep_w.count_ones());
    for (c, holders) in &owners {
        prop_assert_eq!(holders.len() as i64, copies, "{:?} held {} times", c, holders.len());
        // Exactly one holder has every replicated bit clear: the one that stores.
        let canonical = holders.iter().filter(|(w, lane, _)| w & rep_w == 0 && lane & rep_l == 0).count();
        prop_assert_eq!(canonical, 1);
    }
    Ok(())
}

proptest! {
    // Every tile of power-of-two dims gets a layout over all the warps asked for; small
    // tiles are replicated, every element has one storing owner.
    #[test]
    fn blocked_covers_every_element((shape, bytes, warps) in shape_strategy()) {
        let b = Blocked::row_major(&shape, bytes, warps).unwrap();
        prop_assert_eq!(b.num_warps(), warps);
        let l = b.to_linear(&shape);
        check_cover(&l)?;
        let total: i64 = shape.iter().product();
        if total >= 32 * warps {
            // Big enough: no copies, and vectors contiguous along the last dim.
            prop_assert_eq!(l.replicated_lanes() + l.replicated_warps(), 0);
            prop_assert_eq!(l.num_regs() * 32 * warps, total);
            let vec = b.size_per_thread[1];
            for r in 0..l.num_regs() {
                prop_assert_eq!(l.reg_offset(r)[1] % vec.max(1), r % vec.max(1));
            }
        }
    }

    // A slice holds, in each thread, exactly the parent rows that thread touches, once.
    #[test]
    fn slice_matches_parent_rows((shape, bytes, warps) in shape_strategy()) {
        let b = Blocked::row_major(&shape, bytes, warps).unwrap();
        let parent = Layout::Blocked(b);
        let s = Layout::Slice { dim: 1, parent: Box::new(parent.clone()) };
        let sshape = vec![shape[0], 1];
        let (pl, sl) = (parent.to_linear(&shape), s.to_linear(&sshape));
        check_cover(&sl)?;
        for w in 0..warps { for lane in 0..32 {
            let mut rows_parent: Vec<i64> = (0..pl.num_regs()).map(|r| pl.coord(w, lane, r)[0]).collect();
            rows_parent.sort(); rows_parent.dedup();
            let mut rows_slice: Vec<i64> = (0..sl.num_regs()).map(|r| sl.coord(w, lane, r)[0]).collect();
            rows_slice.sort();
            prop_assert_eq!(&rows_parent, &rows_slice);
        }}
        // A slice of a slice (the max of a column of row maxima) is a layout too.
        let ss = Layout::Slice { dim: 0, parent: Box::new(s) };
        check_cover(&ss.to_linear(&[1, 1]))?;
    }

    // Unit dims do not change the default layout: a reshape that adds or drops them is free.
    #[test]
    fn row_major_ignores_unit_dims((shape, bytes, warps) in shape_strategy(), at in 0usize..3) {
        let mut wide = shape.clone();
        wide.insert(at.min(1), 1);
        let a = Blocked::row_major(&shape, bytes, warps).unwrap().to_linear(&shape);
        let b = Blocked::row_major(&wide, bytes, warps).unwrap().to_linear(&wide);
        prop_assert_eq!(a.squeezed(), b.squeezed());
    }

    // Every element of a tile has its own slot inside the padded buffer.
    #[test]
    fn shared_is_injective_and_in_bounds(dims in prop::collection::vec(1i64..9, 1..4), bytes in prop::sample::select(vec![2u32, 4])) {
        let s = Shared::for_exchange(&dims, bytes);
        let st = s.strides(&dims);
        let mut seen = std::collections::BTreeSet::new();
        let n: i64 = dims.iter().product();
        for lin in 0..n {
            let mut rest = lin;
            let mut off = 0;
            for d in (0..dims.len()).rev() {
                off += (rest % dims[d]) * st[d];
                rest /= dims[d];
            }
            prop_assert!(off < s.size(&dims), "{off} outside {}", s.size(&dims));
            prop_assert!(seen.insert(off));
        }
        prop_assert_eq!(Shared::parse(&s.to_mlir()), Some(s));
    }
}

#[test]
fn softmax_row_layout() {
    let b = Blocked::row_major(&[1, 4096], 2, 4).unwrap();
    assert_eq!(b.size_per_thread, vec![1, 8]);
    assert_eq!(b.threads_per_warp, vec![1, 32]);
    assert_eq!(b.warps_per_cta, vec![1, 4]);
    assert_eq!(Layout::Blocked(b).to_mlir(), "#tilegpu.blocked<[1, 8], [1, 32], [1, 4], [1, 0]>");
}

#[test]
fn small_tiles_keep_the_warps_and_replicate() {
    // 1024 f16 over 8 warps: 8-byte vectors instead of 4 idle warps.
    let b = Blocked::row_major(&[1, 1024], 2, 8).unwrap();
    assert_eq!((b.size_per_thread[1], b.num_warps()), (4, 8));
    // A [8] tile over 4 warps: lanes 8..31 and warps 1..3 hold copies.
    let l = Blocked::row_major(&[8], 4, 4).unwrap().to_linear(&[8]);
    assert_eq!((l.num_regs(), l.replicated_lanes(), l.replicated_warps()), (1, 0b11000, 0b11));
    let one = Blocked::row_major(&[1], 4, 2).unwrap().to_linear(&[1]);
    assert_eq!((one.num_regs(), one.replicated_lanes(), one.replicated_warps()), (1, 31, 1));
}

#[test]
fn rope_tables_place_alike() {
    // cos/sin rows broadcast to q (32 heads) and k (8 heads) with the same warp count.
    let q = Layout::Blocked(Blocked::row_major(&[32, 64], 2, 2).unwrap());
    let k = Layout::Blocked(Blocked::row_major(&[8, 64], 2, 2).unwrap());
    let sq = Layout::Slice { dim: 0, parent: Box::new(q) };
    let sk = Layout::Slice { dim: 0, parent: Box::new(k) };
    assert!(sq.same_placement(&sk, &[1, 64]));
    let q4 = Blocked::row_major(&[1, 1, 32, 64], 2, 2).unwrap().to_linear(&[1, 1, 32, 64]);
    let q2 = Blocked::row_major(&[32, 64], 2, 2).unwrap().to_linear(&[32, 64]);
    assert_eq!(q4.squeezed(), q2.squeezed());
}

#[test]
fn dim_terms_are_one_lane_and_one_warp_run_for_blocked() {
    let b = Blocked::row_major(&[16, 256], 2, 8).unwrap();
    let l = Layout::Blocked(b.clone());
    for d in 0..2 {
        let t = l.dim_terms(&[16, 256], d).unwrap();
        assert!(t.lane.len() <= 1 && t.warp.len() <= 1, "{t:?}");
        if let Some(r) = t.lane.first() {
            assert_eq!(r.base, b.size_per_thread[d]);
            assert_eq!(1 << r.bits, b.threads_per_warp[d]);
        }
        assert_eq!(t.unit, b.size_per_thread[d]);
    }
}

#[test]
fn layout_text_round_trips() {
    let l = Layout::Blocked(Blocked::row_major(&[16, 256], 2, 8).unwrap());
    let s = Layout::Slice { dim: 1, parent: Box::new(l.clone()) };
    for x in [l, s] {
        assert_eq!(parse_layout(&x.to_mlir()), Some(x.clone()));
    }
    assert_eq!(parse_layout("#tilegpu.blocked<[1], [32], [1]>"), None);
    assert_eq!(parse_layout("#tilegpu.blocked<[1, 2], [32], [1], [0]>"), None);
}

#[test]
fn rejects_non_power_of_two() {
    assert!(matches!(Blocked::row_major(&[1, 96], 2, 4), Err(LayoutError::NotPowerOfTwo(_))));
}

fn mma_strategy() -> impl Strategy<Value = (i64, i64, i64, i64)> {
    // M, N, K as powers of two the instruction fits, and a warp count.
    (4u32..8, 3u32..8, 4u32..8, prop::sample::select(vec![1i64, 2, 4, 8]))
        .prop_map(|(m, n, k, w)| (1i64 << m, 1i64 << n, 1i64 << k, w))
}

/// The element of the mma.m16n8k16 fragment a lane's register holds, from the PTX ISA tables
/// (written out independently of the linear maps): accumulator c0..c3, A a0..a7, B b0..b3.
fn isa_fragment(kind: u32, lane: i64, reg: i64) -> (i64, i64) {
    let (g, t) = (lane / 4, lane % 4);
    match kind {
        2 => (g + 8 * ((reg / 2) % 2), 2 * t + reg % 2),
        0 => (g + 8 * ((reg / 2) % 2), 2 * t + reg % 2 + 8 * (reg / 4)),
        _ => (2 * t + reg % 2 + 8 * (reg / 2), g),
    }
}

proptest! {
    // Accumulator and operands cover their tiles with one storing owner per element, and
    // the first registers of warp 0 are the ISA's fragments.
    #[test]
    fn mma_layouts_cover_and_match_the_isa((m, n, k, warps) in mma_strategy(), balanced: bool) {
        let mma = if balanced { Mma::balanced(&[m, n], warps) } else { Mma::for_shape(&[m, n], warps) };
        prop_assert_eq!(mma.num_warps(), warps);
        let acc = Layout::Mma(mma).to_linear(&[m, n]);
        check_cover(&acc)?;
        let a = Layout::DotOperand { op_idx: 0, parent: mma }.to_linear(&[m, k]);
        let b = Layout::DotOperand { op_idx: 1, parent: mma }.to_linear(&[k, n]);
        check_cover(&a)?;
        check_cover(&b)?;
        for lane in 0..32 {
            for r in 0..4 {
                let (row, col) = isa_fragment(2, lane, r);
                prop_assert_eq!(acc.coord(0, lane, r), vec![row, col]);
                let (kk, nn) = isa_fragment(1, lane, r);
                prop_assert_eq!(b.coord(0, lane, r), vec![kk, nn]);
            }
            for r in 0..8 {
                let (row, col) = isa_fragment(0, lane, r);
                prop_assert_eq!(a.coord(0, lane, r), vec![row, col]);
            }
        }
        // FlashAttention-2's P: an [M, K] accumulator over one N warp is the A operand.
        if mma.warps_per_cta[1] == 1 && k >= 16 {
            let (p, a0) = (Layout::Mma(mma), Layout::DotOperand { op_idx: 0, parent: mma });
            prop_assert!(p.same_placement(&a0, &[m, k]), "P is not the A operand");
        }
        for l in [Layout::Mma(mma), Layout::DotOperand { op_idx: 1, parent: mma }] {
            prop_assert_eq!(parse_layout(&l.to_mlir()), Some(l.clone()));
        }
    }

    // A swizzled buffer is a permutation within each row, and an ldmatrix phase (one vector
    // column of 8 consecutive rows) touches 8 distinct 16-byte bank groups.
    #[test]
    fn swizzle_permutes_rows_and_spreads_ldmatrix_phases(r in 3u32..8, c in 3u32..9, transposed: bool) {
        let (rows, cols) = (1i64 << r, 1i64 << c);
        let order = if transposed { [0, 1] } else { [1, 0] };
        let shape = if transposed { vec![cols, rows] } else { vec![rows, cols] };
        let s = SwizzledShared::least_conflicts(&shape, 2, order);
        let at = |row: i64, col: i64| if transposed { vec![col, row] } else { vec![row, col] };
        for row in 0..rows {
            let mut offs: Vec<i64> = (0..cols).map(|col| s.offset(&shape, &at(row, col))).collect();
            offs.sort();
            prop_assert_eq!(offs, (row * cols..(row + 1) * cols).collect::<Vec<_>>());
        }
        if cols >= 8 {
            for r0 in (0..rows - 7).step_by(8) {
                for v in 0..cols / 8 {
                    let mut groups: Vec<i64> = (0..8).map(|i| (s.offset(&shape, &at(r0 + i, v * 8)) * 2 / 16) % 8).collect();
                    groups.sort();
                    groups.dedup();
                    prop_assert_eq!(groups.len(), 8, "rows {}.. vector {}", r0, v);
                }
            }
        }
        prop_assert_eq!(SwizzledShared::parse(&s.to_mlir()), Some(s));
    }
}

#[test]
fn the_bank_model_sees_unswizzled_conflicts() {
    // 128-byte rows without a swizzle: the 8 rows of an ldmatrix phase share one bank group.
    let plain = SwizzledShared { vec: 8, per_phase: 1, max_phase: 1, order: [1, 0], atom: 0 };
    assert_eq!(plain.ldmatrix_conflicts(&[64, 64], 2), 8 * 8 * 7);
    for (shape, order) in [([64, 64], [1, 0]), ([128, 32], [1, 0]), ([32, 128], [0, 1])] {
        let s = SwizzledShared::least_conflicts(&shape, 2, order);
        assert_eq!(s.ldmatrix_conflicts(&shape, 2), 0, "{shape:?} {order:?}");
    }
}

/// The element of the wgmma m64nNk16 accumulator that register `reg` of thread `t` (0..128)
/// of a warpgroup holds, from the PTX ISA's figure (written out independently of the maps):
/// warp `t / 32` owns rows 16w.., register pairs walk N in steps of 8, the second pair of
/// each four is 8 rows down.
fn isa_wgmma_acc(t: i64, reg: i64) -> (i64, i64) {
    let (w, lane) = (t / 32, t % 32);
    let (g, q) = (lane / 4, lane % 4);
    (16 * w + g + 8 * ((reg / 2) % 2), 8 * (reg / 4) + 2 * q + reg % 2)
}

proptest! {
    // The wgmma accumulator over 1 or 2 warpgroups (and M blocks repeated in registers) is
    // the ISA's fragment per 64-row block, registers of block i after those of block i - 1;
    // the A operand in registers is the mma.sync A fragment of each warp's 16 rows.
    #[test]
    fn wgmma_accumulator_matches_the_isa(n in 4u32..9, wgs in 1i64..3, reps in 0u32..2) {
        let n = 1i64 << n;
        let warps = 4 * wgs;
        let m = (64 * wgs) << reps;
        let mma = Mma::wgmma(&[m, n], 16, warps).expect("fits");
        prop_assert_eq!(mma.family, MmaFamily::Wgmma);
        let acc = Layout::Mma(mma).to_linear(&[m, n]);
        check_cover(&acc)?;
        let per_block = n / 2;
        prop_assert_eq!(acc.num_regs(), per_block << reps);
        for t in 0..32 * warps {
            let (wg, tw) = (t / 128, t % 128);
            for r in 0..acc.num_regs() {
                let (block, rr) = (r / per_block, r % per_block);
                let (row, col) = isa_wgmma_acc(tw, rr);
                let want = vec![block * 64 * wgs + wg * 64 + row, col];
                prop_assert_eq!(acc.coord(t / 32, t % 32, r), want, "thread {} reg {}", t, r);
            }
        }
        let a = Layout::DotOperand { op_idx: 0, parent: mma };
        prop_assert!(Layout::Mma(mma).same_placement(&a, &[m, 16]));
        for l in [Layout::Mma(mma), a] {
            prop_assert_eq!(parse_layout(&l.to_mlir()), Some(l.clone()));
        }
    }

    // The NVMMA layout is the hardware's byte-address swizzle (bits 4.. XOR bits 7..) of the
    // atom-blocked buffer, a bijection onto the buffer, and reads back from its text.
    #[test]
    fn nvmma_is_the_hardware_swizzle(bytes in prop::sample::select(vec![32i64, 64, 128]), r in 3u32..8, c in 0u32..3, transposed: bool) {
        let atom = bytes / 2;
        let (rows, cols) = (1i64 << r, atom << c);
        let order = if transposed { [0, 1] } else { [1, 0] };
        let shape = if transposed { vec![cols, rows] } else { vec![rows, cols] };
        let s = SwizzledShared::nvmma(bytes, 2, order);
        prop_assert_eq!(SwizzledShared::nvmma_for(atom, 2, order), Some(s.clone()));
        let bits = (bytes / 16).trailing_zeros();
        let mut seen = vec![false; (rows * cols) as usize];
        for row in 0..rows {
            for col in 0..cols {
                let c = if transposed { vec![col, row] } else { vec![row, col] };
                let off = s.offset(&shape, &c);
                // Unswizzled byte address in the atom-blocked buffer, then the hardware XOR.
                let plain = ((col / atom) * rows * atom + row * atom + col % atom) * 2;
                let mask = (1 << bits) - 1;
                let hw = plain ^ (((plain >> 7) & mask) << 4);
                prop_assert_eq!(off * 2, hw, "row {} col {}", row, col);
                prop_assert!(!seen[off as usize]);
                seen[off as usize] = true;
            }
        }
        prop_assert_eq!(s.nvmma_bytes(), Some(bytes));
        prop_assert_eq!(SwizzledShared::parse(&s.to_mlir()), Some(s));
    }
}

proptest! {
    // The tcgen05 accumulator covers its tile exactly once (every element in one thread's
    // register), each thread a whole row segment of consecutive columns, and its text
    // round-trips.
    #[test]
    fn tcgen05_accumulator_covers_the_tile_a_row_a_thread(n in 4u32..9, wgs in 1i64..5, reps in 0u32..2) {
        let n = 1i64 << n;
        let warps = 4 * wgs;
        let m = 128i64 << reps;
        let Some(mma) = Mma::tcgen05(&[m, n], 64, warps) else { return Ok(()) };
        prop_assert_eq!(mma.family, MmaFamily::Tcgen05);
        let l = Layout::Mma(mma);
        prop_assert_eq!(parse_layout(&l.to_mlir()), Some(l.clone()));
        let acc = l.to_linear(&[m, n]);
        check_cover(&acc)?;
        let cols = n / mma.warps_per_cta[1];
        // A warpgroup a block while both last: 8 warps over 256 rows leave each thread a row.
        let bw = mma.tcgen05_block_warps();
        prop_assert_eq!(bw, (m / 128).min(wgs & wgs.wrapping_neg()).min(warps / 4));
        prop_assert_eq!(acc.warps.iter().all(|b| b[1] == 0), bw == warps / 4);
        for w in 0..warps {
            for lane in 0..32 {
                for r in 0..acc.num_regs() {
                    let c = acc.coord(w, lane, r);
                    let block = (r / cols) * bw + (w / 4) % bw;
                    prop_assert_eq!(c[0], block * 128 + 32 * (w % 4) + lane);
                    prop_assert_eq!(c[1], (w / 4 / bw) * cols + r % cols);
                }
            }
        }
    }

    // A tcgen05 accumulator of 16, 32 or 64 rows (the M = 64 instruction) covers its tile
    // exactly once, no lane idle: lanes 0-15 the rows of the warp's 16-row block, lane 16 the
    // second half of the warp's columns, the warp bits past the row blocks the column ranges.
    #[test]
    fn small_tcgen05_accumulator_covers_the_tile_with_every_lane(n in 4u32..9, wgs in 1i64..5, rows in 0u32..3) {
        let n = 1i64 << n;
        let warps = 4 * wgs;
        let m = 16i64 << rows;
        let Some(mma) = Mma::tcgen05(&[m, n], 64, warps) else { return Ok(()) };
        prop_assert_eq!(mma.warps_per_cta, [m / 16, warps * 16 / m]);
        let l = Layout::Mma(mma);
        prop_assert_eq!(parse_layout(&l.to_mlir()), Some(l.clone()));
        let acc = l.to_linear(&[m, n]);
        check_cover(&acc)?;
        prop_assert_eq!(acc.replicated_lanes(), 0);
        let cols = n / mma.warps_per_cta[1];
        for w in 0..warps {
            for lane in 0..32 {
                for r in 0..acc.num_regs() {
                    let c = acc.coord(w, lane, r);
                    prop_assert_eq!(c[0], 16 * (w % (m / 16)) + lane % 16);
                    prop_assert_eq!(c[1], (w / (m / 16)) * cols + (lane / 16) * (cols / 2) + r);
                }
            }
        }
    }
}

/// The bytes of the mma.m16n8k32 fp8 fragments (PTX ISA, "Matrix fragments for mma.m16n8k32"
/// with `.e4m3`/`.e5m2`, written out here): lane `4g + t` holds, of A (16×32), rows `g` and
/// `g + 8` (a0/a2, a1/a3), columns `4t … 4t + 3` and those plus 16 (a2, a3), four bytes a
/// register; of B (32×8), rows `4t … 4t + 3` (b0) and those plus 16 (b1) of column `g`.
/// Register `reg`, byte `byte`: (row, col) of the 8-bit tile.
fn isa_fp8_fragment(b_operand: bool, lane: i64, reg: i64, byte: i64) -> (i64, i64) {
    let (g, t) = (lane / 4, lane % 4);
    if b_operand {
        (4 * t + byte + 16 * reg, g)
    } else {
        (g + 8 * (reg % 2), 4 * t + byte + 16 * (reg / 2))
    }
}

/// What the fp8 lowering relies on: the m16n8k32 fp8 fragments are the m16n8k16 16-bit
/// fragments of the same buffer read as byte pairs (16-bit element `e` along K is bytes `2e`
/// and `2e + 1`) — so `ldmatrix` of the pair view loads exactly the bytes the 8-bit
/// instruction wants, in its registers' order. Checked for every lane, register and byte
/// against the 16-bit operand maps of a warp.
#[test]
fn fp8_k32_fragments_are_the_16bit_fragments_of_byte_pairs() {
    let mma = Mma::for_shape(&[16, 8], 1);
    let a16 = Layout::DotOperand { op_idx: 0, parent: mma }.to_linear(&[16, 16]);
    let b16 = Layout::DotOperand { op_idx: 1, parent: mma }.to_linear(&[16, 8]);
    for lane in 0..32 {
        // A: four 32-bit registers, each two 16-bit elements (the map's registers 2j, 2j+1).
        for reg in 0..4 {
            for byte in 0..4 {
                let e = a16.coord(0, lane, 2 * reg + byte / 2);
                let pair = (e[0], 2 * e[1] + byte % 2);
                assert_eq!(pair, isa_fp8_fragment(false, lane, reg, byte), "A lane {lane} reg {reg} byte {byte}");
            }
        }
        for reg in 0..2 {
            for byte in 0..4 {
                let e = b16.coord(0, lane, 2 * reg + byte / 2);
                let pair = (2 * e[0] + byte % 2, e[1]);
                assert_eq!(pair, isa_fp8_fragment(true, lane, reg, byte), "B lane {lane} reg {reg} byte {byte}");
            }
        }
    }
}

/// A buffer read transposed (`local_load_trans`) is the same bytes: every element of the
/// transposed view lies where the buffer put it, for the whole-row swizzles and the NVMMA
/// atoms, either order.
#[test]
fn a_transposed_shared_buffer_addresses_the_same_bytes() {
    use crate::tir::Type;
    let shape = [16i64, 512];
    let layouts = [
        SwizzledShared::least_conflicts(&shape, 2, [1, 0]),
        SwizzledShared::least_conflicts(&[512, 16], 2, [0, 1]),
        SwizzledShared::nvmma(128, 2, [1, 0]),
        SwizzledShared::nvmma(64, 2, [0, 1]),
    ];
    for l in layouts {
        let buf = Type::Smem { shape: shape.to_vec(), dtype: crate::DType::F16, layout: l.clone() };
        let Some(Type::Smem { shape: ts, layout: tl, .. }) = buf.smem_transposed() else { panic!("2-D") };
        assert_eq!(ts, vec![512, 16]);
        for i in 0..16 {
            for j in 0..512 {
                assert_eq!(l.offset(&shape, &[i, j]), tl.offset(&ts, &[j, i]), "{l:?} ({i}, {j})");
            }
        }
    }
}

/// Shapes no tcgen05 instruction computes are refused, never a division by zero: fewer
/// than 16 rows (the fuzzer's `mla_decode` with HB = 8 on sm_103a), zero, odd counts.
#[test]
fn tcgen05_refuses_products_it_has_no_instruction_for() {
    for m in [0, 1, 8, 24, 48, 96] {
        for warps in [1, 4, 8] {
            assert_eq!(Mma::tcgen05(&[m, 64], 64, warps), None, "m {m} warps {warps}");
        }
    }
    assert!(Mma::tcgen05(&[16, 512], 64, 4).is_some());
}

/// quant_fp4's reshapes: [16, 256] bf16 rows (16-byte vectors) seen as [16, 16, 16] blocks
/// keep a block in two lanes of eight registers; the blocks seen as [16, 128, 2] pairs keep a
/// pair in a thread. A tile held by several lanes (a slice of copies) has no blocked match.
#[test]
fn matching_flat_renames_quant_fp4s_reshapes() {
    let rows = Blocked::row_major(&[16, 256], 2, 4).unwrap();
    let flat = rows.to_linear(&[16, 256]).flattened();
    let blocks = Blocked::matching_flat(&[16, 16, 16], &flat).expect("blocks");
    assert_eq!(blocks.size_per_thread, vec![1, 1, 8]);
    assert_eq!(blocks.threads_per_warp, vec![1, 16, 2]);
    assert_eq!(blocks.warps_per_cta, vec![4, 1, 1]);
    let pairs = Blocked::matching_flat(&[16, 128, 2], &blocks.to_linear(&[16, 16, 16]).flattened()).expect("pairs");
    assert_eq!(pairs.size_per_thread, vec![1, 4, 2]);
    assert_eq!(pairs.threads_per_warp, vec![1, 32, 1]);
    let maxima = Layout::Slice { dim: 2, parent: Box::new(Layout::Blocked(blocks)) };
    assert_eq!(Blocked::matching_flat(&[16, 16], &maxima.to_linear(&[16, 16, 1]).flattened()), None);
    // The flat layout of another element count matches nothing.
    assert_eq!(Blocked::matching_flat(&[16, 128], &flat), None);
}

proptest! {
    // Splitting a row-major tile's last dim in two: where a blocked layout matches, it holds
    // every element once, in the same thread and register as the unsplit tile (the reshape
    // renames registers); unsplit again, the match places elements as the original does.
    #[test]
    fn matching_flat_places_like_the_operand((shape, bytes, warps) in shape_strategy(), cut in 0u32..14) {
        let b = Blocked::row_major(&shape, bytes, warps).unwrap();
        let flat = b.to_linear(&shape).flattened();
        let back = Blocked::matching_flat(&shape, &flat);
        let total: i64 = shape.iter().product();
        if total >= 32 * warps {
            let back = back.expect("a blocked layout matches itself");
            prop_assert_eq!(back.to_linear(&shape), b.to_linear(&shape));
        }
        let inner = 1i64 << cut.min(shape[1].trailing_zeros());
        let split = vec![shape[0], shape[1] / inner, inner];
        if let Some(m) = Blocked::matching_flat(&split, &flat) {
            let l = m.to_linear(&split);
            check_cover(&l)?;
            prop_assert_eq!(l.flattened(), flat);
        }
    }
}
