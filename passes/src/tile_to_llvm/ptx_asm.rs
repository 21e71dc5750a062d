//! A builder of inline PTX (`llvm.inline_asm`): operands are numbered outputs first, then
//! inputs, and each gets the register constraint of its type, so the `$n` numbering, the
//! constraint string and the result struct come from one place.

use super::emit::{Emitter, Reg, Ty};

/// The PTX register class of a type: `h` (16-bit), `r` (32-bit), `l` (64-bit, pointers),
/// `b` (predicate).
fn constraint(t: &Ty) -> &'static str {
    match t {
        Ty::I1 => "b",
        Ty::I16 | Ty::F16 | Ty::BF16 => "h",
        Ty::I64 | Ty::Ptr(_) => "l",
        Ty::F64 => "d",
        _ => "r",
    }
}

#[derive(Debug, Default)]
pub(crate) struct PtxAsm {
    outs: Vec<Ty>,
    /// Constraints of the outputs where not the type's class (`f` for tensor-core floats).
    out_cons: Vec<Option<&'static str>>,
    /// Inputs tied to an output (read-write operands): (output index, value).
    tied: Vec<(usize, Reg)>,
    ins: Vec<Reg>,
    text: String,
}

impl PtxAsm {
    pub fn new() -> PtxAsm {
        PtxAsm::default()
    }

    /// A new output operand (`$k`); every output is declared before the first input.
    pub fn output(&mut self, ty: Ty) -> String {
        debug_assert!(self.ins.is_empty(), "inline asm outputs come before inputs");
        self.outs.push(ty);
        self.out_cons.push(None);
        format!("${}", self.outs.len() - 1)
    }

    /// A read-write operand (`$k`: an output whose register starts as `r`, LLVM's tied
    /// input), with the register class `cons`; the output replaces `r`. Declared with the
    /// outputs, before any input. The `wgmma` accumulators pass through the instruction and
    /// its wait this way, so no use of them can move above the wait.
    pub fn inout(&mut self, r: &Reg, cons: &'static str) -> String {
        debug_assert!(self.ins.is_empty(), "inline asm outputs come before inputs");
        self.outs.push(r.ty.clone());
        self.out_cons.push(Some(cons));
        self.tied.push((self.outs.len() - 1, r.clone()));
        format!("${}", self.outs.len() - 1)
    }

    /// A new input operand (`$k`).
    pub fn input(&mut self, r: &Reg) -> String {
        self.ins.push(r.clone());
        format!("${}", self.outs.len() + self.tied.len() + self.ins.len() - 1)
    }

    /// Appends PTX text (instructions end with `;`).
    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Emits the asm; returns the outputs (one register each).
    pub fn emit(self, em: &mut Emitter) -> Vec<Reg> {
        let mut cons: Vec<String> = self
            .outs
            .iter()
            .zip(&self.out_cons)
            .map(|(t, c)| format!("={}", c.unwrap_or_else(|| constraint(t))))
            .collect();
        cons.extend(self.tied.iter().map(|(k, _)| k.to_string()));
        cons.extend(self.ins.iter().map(|r| constraint(&r.ty).to_string()));
        let ins: Vec<&Reg> = self.tied.iter().map(|(_, r)| r).chain(&self.ins).collect();
        let ret = match self.outs.as_slice() {
            [] => None,
            [t] => Some(t.clone()),
            ts => Some(Ty::Struct(ts.to_vec())),
        };
        let multi = self.outs.len() > 1;
        match em.inline_asm(&self.text, &cons.join(","), &ins, ret) {
            None => vec![],
            Some(r) if multi => (0..self.outs.len()).map(|i| em.extractvalue(&r, i)).collect(),
            Some(r) => vec![r],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_are_numbered_outputs_first() {
        let mut em = Emitter::new();
        let addr = Reg::new("%p", Ty::Ptr(1));
        let pred = Reg::new("%c", Ty::I1);
        let mut a = PtxAsm::new();
        let o0 = a.output(Ty::I32);
        let o1 = a.output(Ty::I32);
        let p = a.input(&addr);
        let c = a.input(&pred);
        a.push(&format!("@{c} ld.global.v2.b32 {{{o0}, {o1}}}, [{p}];"));
        let outs = a.emit(&mut em);
        assert_eq!(outs.len(), 2);
        let (_, body) = em.finish();
        assert!(
            body.contains(
                "llvm.inline_asm has_side_effects \"@$3 ld.global.v2.b32 {$0, $1}, [$2];\", \"=r,=r,l,b\" %p, %c : (!llvm.ptr<1>, i1) -> !llvm.struct<(i32, i32)>"
            ),
            "{body}"
        );
        assert!(body.contains("llvm.extractvalue %v1[1] : !llvm.struct<(i32, i32)>"), "{body}");
    }
}
