//! Integer formulas written once for two sides: the emitter's i32 registers in the lowering,
//! plain integers ([`Ints`]) where the lowering evaluates the constant part of one at
//! compile time and in the models the tests hold the formulas to (a sort network's pairs,
//! the split of a swizzle into a thread part and a register constant).

use super::emit::{Emitter, Reg};

pub(crate) trait IntArith {
    type V: Clone;
    fn c(&mut self, v: i64) -> Self::V;
    fn add(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn mul(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn lshr(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn shl(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn and(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn or(&mut self, a: &Self::V, b: &Self::V) -> Self::V;
    fn xor(&mut self, a: &Self::V, b: &Self::V) -> Self::V;

    fn add_c(&mut self, a: &Self::V, k: i64) -> Self::V {
        let k = self.c(k);
        self.add(a, &k)
    }
    fn mul_c(&mut self, a: &Self::V, k: i64) -> Self::V {
        let k = self.c(k);
        self.mul(a, &k)
    }
    fn lshr_c(&mut self, a: &Self::V, s: i64) -> Self::V {
        let s = self.c(s);
        self.lshr(a, &s)
    }
    fn shl_c(&mut self, a: &Self::V, s: i64) -> Self::V {
        let s = self.c(s);
        self.shl(a, &s)
    }
    fn and_c(&mut self, a: &Self::V, mask: i64) -> Self::V {
        let m = self.c(mask);
        self.and(a, &m)
    }
}

impl IntArith for Emitter {
    type V = Reg;
    fn c(&mut self, v: i64) -> Reg {
        self.ci32(v)
    }
    fn add(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::add(self, a, b)
    }
    fn mul(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::mul(self, a, b)
    }
    fn lshr(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::lshr(self, a, b)
    }
    fn shl(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::shl(self, a, b)
    }
    fn and(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::and(self, a, b)
    }
    fn or(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::or(self, a, b)
    }
    fn xor(&mut self, a: &Reg, b: &Reg) -> Reg {
        Emitter::xor(self, a, b)
    }
}

/// Plain integers (non-negative indices: `lshr` is `>>`).
pub(crate) struct Ints;

impl IntArith for Ints {
    type V = i64;
    fn c(&mut self, v: i64) -> i64 {
        v
    }
    fn add(&mut self, a: &i64, b: &i64) -> i64 {
        a + b
    }
    fn mul(&mut self, a: &i64, b: &i64) -> i64 {
        a * b
    }
    fn lshr(&mut self, a: &i64, b: &i64) -> i64 {
        a >> b
    }
    fn shl(&mut self, a: &i64, b: &i64) -> i64 {
        a << b
    }
    fn and(&mut self, a: &i64, b: &i64) -> i64 {
        a & b
    }
    fn or(&mut self, a: &i64, b: &i64) -> i64 {
        a | b
    }
    fn xor(&mut self, a: &i64, b: &i64) -> i64 {
        a ^ b
    }
}
