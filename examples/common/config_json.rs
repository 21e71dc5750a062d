//! A model's `config.json` as transformers writes it, checked field by field against the
//! configuration an example is built for: every mismatch is an error naming the field, the
//! value found and the one expected.

use serde_json::Value;

/// The parsed file and the names its errors use.
#[derive(Debug)]
pub struct ConfigJson {
    v: Value,
    /// The published configuration the fields are checked against ("Qwen2-7B").
    model: &'static str,
}

impl ConfigJson {
    /// `text` as JSON describing a `model_type` model (when it names one).
    pub fn parse(text: &str, model_type: &str, model: &'static str) -> Result<ConfigJson, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("config.json is not JSON: {e}"))?;
        if let Some(m) = v.get("model_type").and_then(Value::as_str) {
            if m != model_type {
                return Err(format!("config.json describes a `{m}` model; this decoder is for `{model_type}`"));
            }
        }
        Ok(ConfigJson { v, model })
    }

    /// A field as it is (a model checks its own structured fields; not every example has one).
    #[allow(dead_code)]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.v.get(key)
    }

    pub fn int(&self, key: &str) -> Result<i64, String> {
        self.v.get(key).and_then(Value::as_i64).ok_or_else(|| format!("config.json has no integer `{key}`"))
    }

    /// A number at the top level or among the RoPE parameters (transformers 5 keeps them in
    /// `rope_parameters`, 4.x in `rope_scaling`).
    pub fn float(&self, key: &str) -> Result<f64, String> {
        let nested = ["rope_parameters", "rope_scaling"].into_iter().filter_map(|o| self.v.get(o)?.get(key));
        self.v
            .get(key)
            .into_iter()
            .chain(nested)
            .find_map(Value::as_f64)
            .ok_or_else(|| format!("config.json has no number `{key}`"))
    }

    /// Each integer field equal to the expected value.
    pub fn expect_ints(&self, fields: &[(&str, i64)]) -> Result<(), String> {
        for &(key, expected) in fields {
            let got = self.int(key)?;
            if got != expected {
                return Err(format!("config mismatch: `{key}` is {got}, {}'s is {expected}", self.model));
            }
        }
        Ok(())
    }

    /// Each number field within a relative 1e-6 of the expected value.
    pub fn expect_floats(&self, fields: &[(&str, f64)]) -> Result<(), String> {
        for &(key, expected) in fields {
            let got = self.float(key)?;
            if (got - expected).abs() > 1e-6 * expected.abs() {
                return Err(format!("config mismatch: `{key}` is {got}, {}'s is {expected}", self.model));
            }
        }
        Ok(())
    }

    /// Each boolean field false or absent.
    pub fn expect_false(&self, keys: &[&str]) -> Result<(), String> {
        for key in keys {
            if self.v.get(*key).and_then(Value::as_bool) == Some(true) {
                return Err(format!("config mismatch: `{key}` is true; {}'s is false", self.model));
            }
        }
        Ok(())
    }

    /// `num_hidden_layers`, from 1 to the published count.
    pub fn layers(&self, most: i64) -> Result<i64, String> {
        let layers = self.int("num_hidden_layers")?;
        if !(1..=most).contains(&layers) {
            return Err(format!("config mismatch: `num_hidden_layers` is {layers}, expected 1 to {most}"));
        }
        Ok(layers)
    }
}
