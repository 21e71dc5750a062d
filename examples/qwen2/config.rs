//! The model's configuration: Qwen2-7B's published dimensions, checked against the
//! `config.json` beside the weights (only the number of layers may differ).

use crate::config_json::ConfigJson;

/// The dimensions the decoder is built for.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub hidden: i64,
    pub layers: i64,
    pub heads: i64,
    pub kv_heads: i64,
    pub head_dim: i64,
    pub intermediate: i64,
    pub vocab: i64,
    pub eps: f64,
    pub rope_theta: f64,
}

impl Config {
    /// Qwen2-7B (huggingface.co/Qwen/Qwen2-7B, config.json).
    pub const QWEN2_7B: Config = Config {
        hidden: 3584,
        layers: 28,
        heads: 28,
        kv_heads: 4,
        head_dim: 128,
        intermediate: 18944,
        vocab: 152064,
        eps: 1e-6,
        rope_theta: 1e6,
    };

    /// Query heads per K/V head.
    pub fn group(&self) -> i64 {
        self.heads / self.kv_heads
    }

    /// Columns of the fused Q/K/V projection: the query heads, then the K heads, then V's.
    pub fn qkv_width(&self) -> i64 {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    /// Parameters of the decoder (for the report).
    pub fn parameters(&self) -> i64 {
        let h = self.hidden;
        let kv = self.kv_heads * self.head_dim;
        let layer = h * h + 2 * h * kv + self.qkv_width() + h * h + 3 * h * self.intermediate + 2 * h;
        self.layers * layer + 2 * self.vocab * h + h
    }

    /// The configuration of `config.json` text: Qwen2-7B's except for the number of layers,
    /// or an error naming the first field that differs.
    pub fn from_json(text: &str) -> Result<Config, String> {
        let j = ConfigJson::parse(text, "qwen2", "Qwen2-7B")?;
        let want = Config::QWEN2_7B;
        j.expect_ints(&[
            ("hidden_size", want.hidden),
            ("num_attention_heads", want.heads),
            ("num_key_value_heads", want.kv_heads),
            ("intermediate_size", want.intermediate),
            ("vocab_size", want.vocab),
        ])?;
        j.expect_floats(&[("rms_norm_eps", want.eps), ("rope_theta", want.rope_theta)])?;
        j.expect_false(&["tie_word_embeddings"])?;
        Ok(Config { layers: j.layers(want.layers)?, ..want })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn json(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
        let mut m = serde_json::Map::new();
        for (k, v) in [
            ("model_type", Value::from("qwen2")),
            ("hidden_size", 3584.into()),
            ("num_hidden_layers", 28.into()),
            ("num_attention_heads", 28.into()),
            ("num_key_value_heads", 4.into()),
            ("intermediate_size", 18944.into()),
            ("vocab_size", 152064.into()),
            ("rms_norm_eps", 1e-6.into()),
            ("rope_theta", 1000000.0.into()),
            ("tie_word_embeddings", false.into()),
        ] {
            m.insert(k.into(), v);
        }
        edit(&mut m);
        Value::Object(m).to_string()
    }

    #[test]
    fn qwen2_7b_and_fewer_layers_are_accepted() {
        assert_eq!(Config::from_json(&json(|_| {})).unwrap(), Config::QWEN2_7B);
        let two = Config::from_json(&json(|m| drop(m.insert("num_hidden_layers".into(), 2.into())))).unwrap();
        assert_eq!(two.layers, 2);
        // 7.6 B parameters with 28 layers, as published.
        assert!((Config::QWEN2_7B.parameters() as f64 / 1e9 - 7.62).abs() < 0.01, "{}", Config::QWEN2_7B.parameters());
    }

    #[test]
    fn a_mismatch_names_the_field_and_both_values() {
        let e = Config::from_json(&json(|m| drop(m.insert("num_key_value_heads".into(), 8.into())))).unwrap_err();
        assert!(e.contains("`num_key_value_heads` is 8, Qwen2-7B's is 4"), "{e}");
        let e = Config::from_json(&json(|m| drop(m.insert("rope_theta".into(), 10000.0.into())))).unwrap_err();
        assert!(e.contains("rope_theta"), "{e}");
        let nested = json(|m| {
            let theta = m.remove("rope_theta").unwrap();
            m.insert("rope_parameters".into(), serde_json::json!({"rope_theta": theta, "rope_type": "default"}));
        });
        assert_eq!(Config::from_json(&nested).unwrap(), Config::QWEN2_7B);
        let e = Config::from_json(&json(|m| drop(m.remove("vocab_size")))).unwrap_err();
        assert!(e.contains("no integer `vocab_size`"), "{e}");
        let e = Config::from_json(&json(|m| drop(m.insert("num_hidden_layers".into(), 29.into())))).unwrap_err();
        assert!(e.contains("1 to 28"), "{e}");
        let e = Config::from_json(&json(|m| drop(m.insert("model_type".into(), "llama".into())))).unwrap_err();
        assert!(e.contains("`llama`"), "{e}");
        assert!(Config::from_json("{").unwrap_err().contains("not JSON"));
    }
}
