//! The arguments of a builtin call: positional and named, checked against its signature.

use super::*;

/// Argument matching for builtins: positional then named, each parameter once.
pub(crate) struct Args {
    vals: Vec<Option<(Val, Span)>>,
}

impl Args {
    pub(crate) fn new(cx: &mut Cx, args: &[ast::Arg], spec: &[(&str, bool)], fname: &str, span: Span) -> R<Args> {
        let sig = spec
            .iter()
            .map(|(n, req)| if *req { n.to_string() } else { format!("{n}=…") })
            .collect::<Vec<_>>()
            .join(", ");
        let mut vals: Vec<Option<(Val, Span)>> = vec![None; spec.len()];
        let mut pos = 0;
        for a in args {
            let slot = match &a.name {
                None => {
                    if pos >= spec.len() {
                        return Err(Diagnostic::error(
                            "E0004",
                            format!("`{fname}` takes at most {} arguments", spec.len()),
                        )
                        .with_primary(a.value.span, "extra argument")
                        .with_note(format!("signature: {fname}({sig})")));
                    }
                    pos += 1;
                    pos - 1
                }
                Some(n) => match spec.iter().position(|(s, _)| *s == n.name) {
                    Some(i) if vals[i].is_none() => i,
                    Some(_) => {
                        return Err(Diagnostic::error("E0005", format!("argument `{}` given twice", n.name))
                            .with_primary(n.span, "repeated"))
                    }
                    None => {
                        let close = close_matches(&n.name, spec.iter().map(|s| s.0));
                        let mut d = Diagnostic::error("E0005", format!("`{fname}` has no argument `{}`", n.name))
                            .with_primary(n.span, "unknown argument")
                            .with_note(format!("signature: {fname}({sig})"));
                        if !close.is_empty() {
                            d = d.with_note(format!("did you mean `{}`?", close[0]));
                        }
                        return Err(d);
                    }
                },
            };
            let v = cx.expr(&a.value)?;
            vals[slot] = Some((v, a.value.span));
        }
        for (i, (n, req)) in spec.iter().enumerate() {
            if *req && vals[i].is_none() {
                return Err(Diagnostic::error("E0004", format!("`{fname}` is missing argument `{n}`"))
                    .with_primary(span, "in this call")
                    .with_note(format!("signature: {fname}({sig})")));
            }
        }
        Ok(Args { vals })
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Val> {
        self.vals.get(i).and_then(|v| v.as_ref()).map(|v| &v.0)
    }

    pub(crate) fn span(&self, i: usize) -> Span {
        self.vals.get(i).and_then(|v| v.as_ref()).map(|v| v.1).unwrap_or_default()
    }

    pub(crate) fn any_poison(&self) -> bool {
        fn poisoned(v: &Val) -> bool {
            match v {
                Val::Poison => true,
                Val::Tuple(items) => items.iter().any(poisoned),
                _ => false,
            }
        }
        self.vals.iter().flatten().any(|(v, _)| poisoned(v))
    }

    /// Argument `i` as a tile of builtin `fname`.
    pub(crate) fn tile(&self, i: usize, fname: &str) -> R<ValueId> {
        match self.get(i) {
            Some(Val::Tile(id)) => Ok(*id),
            other => Err(Diagnostic::error(
                "E0006",
                format!("`{fname}` needs a tile, found {}", other.map(kind_name).unwrap_or("nothing")),
            )
            .with_primary(self.span(i), "here")),
        }
    }

    pub(crate) fn const_int(&self, _cx: &Cx, i: usize) -> R<i64> {
        match self.get(i) {
            Some(Val::Int(v)) => Ok(*v),
            Some(other) => {
                Err(Diagnostic::error("E0009", format!("expected a constant integer, found {}", kind_name(other)))
                    .with_primary(self.span(i), "not constant"))
            }
            None => Err(Diagnostic::error("E0004", "missing argument").with_primary(self.span(i), "here")),
        }
    }

    pub(crate) fn dtype(&self, _cx: &Cx, i: usize) -> R<DType> {
        match self.get(i) {
            Some(Val::DType(d)) => Ok(*d),
            Some(other) => Err(Diagnostic::error("E0006", format!("expected a dtype, found {}", kind_name(other)))
                .with_primary(self.span(i), "not a dtype")),
            None => Err(Diagnostic::error("E0004", "missing dtype").with_primary(self.span(i), "here")),
        }
    }
}
