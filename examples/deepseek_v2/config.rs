//! The model's configuration: DeepSeek-V2-Lite's published dimensions, checked against the
//! `config.json` beside the weights (only the number of layers may differ), and its YaRN
//! rotary tables.

use crate::config_json::ConfigJson;
use serde_json::Value;

/// The dimensions the decoder is built for.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub hidden: i64,
    pub layers: i64,
    pub heads: i64,
    /// The compressed K/V (the latent cache's first part) and the rotary part of Q and K.
    pub kv_lora: i64,
    pub nope_dim: i64,
    pub rope_dim: i64,
    pub v_dim: i64,
    /// The dense layers' FFN (the first `dense_layers` layers) and each expert's.
    pub intermediate: i64,
    pub moe_intermediate: i64,
    pub dense_layers: i64,
    pub experts: i64,
    pub shared_experts: i64,
    pub top_k: i64,
    pub vocab: i64,
    pub eps: f64,
    pub rope_theta: f64,
    /// YaRN: the context stretch, the original context, the ramp's ends and the mscales.
    pub yarn_factor: f64,
    pub yarn_original: f64,
    pub beta_fast: f64,
    pub beta_slow: f64,
    pub mscale: f64,
    pub mscale_all_dim: f64,
}

impl Config {
    /// DeepSeek-V2-Lite (huggingface.co/deepseek-ai/DeepSeek-V2-Lite, config.json).
    pub const DEEPSEEK_V2_LITE: Config = Config {
        hidden: 2048,
        layers: 27,
        heads: 16,
        kv_lora: 512,
        nope_dim: 128,
        rope_dim: 64,
        v_dim: 128,
        intermediate: 10944,
        moe_intermediate: 1408,
        dense_layers: 1,
        experts: 64,
        shared_experts: 2,
        top_k: 6,
        vocab: 102400,
        eps: 1e-6,
        rope_theta: 10000.0,
        yarn_factor: 40.0,
        yarn_original: 4096.0,
        beta_fast: 32.0,
        beta_slow: 1.0,
        mscale: 0.707,
        mscale_all_dim: 0.707,
    };

    /// A query head's width: its part without position and its rotary part.
    pub fn qk_dim(&self) -> i64 {
        self.nope_dim + self.rope_dim
    }

    /// A latent cache row: the compressed K/V and the shared rotary key.
    pub fn latent(&self) -> i64 {
        self.kv_lora + self.rope_dim
    }

    /// The shared experts as one FFN of this width.
    pub fn shared_intermediate(&self) -> i64 {
        self.shared_experts * self.moe_intermediate
    }

    /// Parameters of the decoder (for the report).
    pub fn parameters(&self) -> i64 {
        let h = self.hidden;
        let attn = h * self.heads * self.qk_dim()
            + h * self.latent()
            + self.kv_lora
            + self.kv_lora * self.heads * (self.nope_dim + self.v_dim)
            + self.heads * self.v_dim * h
            + 2 * h;
        let dense = 3 * h * self.intermediate;
        let moe = h * self.experts + 3 * h * self.moe_intermediate * self.experts + 3 * h * self.shared_intermediate();
        let dense_layers = self.dense_layers.min(self.layers);
        self.layers * attn + dense_layers * dense + (self.layers - dense_layers) * moe + 2 * self.vocab * h + h
    }

    /// The rotary inverse frequencies of YaRN as transformers computes them (in f32): the
    /// original frequencies below the ramp, the stretched ones above it, a linear blend
    /// between; and the attention scaling (mscale ratio, 1 for this configuration).
    pub fn yarn(&self) -> (Vec<f32>, f64) {
        let dim = self.rope_dim as f32;
        let base = self.rope_theta as f32;
        let correction = |rotations: f64| {
            let d = f64::from(dim);
            d * (self.yarn_original / (rotations * 2.0 * std::f64::consts::PI)).ln() / (2.0 * f64::from(base).ln())
        };
        let low = correction(self.beta_fast).floor().max(0.0) as f32;
        let high = correction(self.beta_slow).ceil().min(f64::from(dim) - 1.0) as f32;
        let high = if low == high { high + 0.001 } else { high };
        let half = self.rope_dim / 2;
        let inv: Vec<f32> = (0..half)
            .map(|i| {
                let pos_freq = base.powf((2 * i) as f32 / dim);
                let (extra, inter) = (1.0 / pos_freq, 1.0 / (self.yarn_factor as f32 * pos_freq));
                let ramp = ((i as f32 - low) / (high - low)).clamp(0.0, 1.0);
                let keep = 1.0 - ramp;
                inter * (1.0 - keep) + extra * keep
            })
            .collect();
        let m = |s: f64| if self.yarn_factor <= 1.0 { 1.0 } else { 0.1 * s * self.yarn_factor.ln() + 1.0 };
        (inv, m(self.mscale) / m(self.mscale_all_dim))
    }

    /// The attention's softmax scale: 1/√(qk_dim) times YaRN's mscale(factor, mscale_all_dim)²
    /// — DeepSeek's (and transformers' `yarn_apply_mscale`): about 1.59× the plain scale here.
    pub fn softmax_scale(&self) -> f64 {
        let m = if self.yarn_factor <= 1.0 { 1.0 } else { 0.1 * self.mscale_all_dim * self.yarn_factor.ln() + 1.0 };
        m * m / (self.qk_dim() as f64).sqrt()
    }

    /// The configuration of `config.json` text: DeepSeek-V2-Lite's except for the number of
    /// layers, or an error naming the first field that differs.
    pub fn from_json(text: &str) -> Result<Config, String> {
        let j = ConfigJson::parse(text, "deepseek_v2", "DeepSeek-V2-Lite")?;
        let want = Config::DEEPSEEK_V2_LITE;
        j.expect_ints(&[
            ("hidden_size", want.hidden),
            ("num_attention_heads", want.heads),
            ("kv_lora_rank", want.kv_lora),
            ("qk_nope_head_dim", want.nope_dim),
            ("qk_rope_head_dim", want.rope_dim),
            ("v_head_dim", want.v_dim),
            ("intermediate_size", want.intermediate),
            ("moe_intermediate_size", want.moe_intermediate),
            ("first_k_dense_replace", want.dense_layers),
            ("n_routed_experts", want.experts),
            ("n_shared_experts", want.shared_experts),
            ("num_experts_per_tok", want.top_k),
            ("vocab_size", want.vocab),
        ])?;
        j.expect_floats(&[
            ("rms_norm_eps", want.eps),
            ("rope_theta", want.rope_theta),
            ("factor", want.yarn_factor),
            ("original_max_position_embeddings", want.yarn_original),
            ("beta_fast", want.beta_fast),
            ("beta_slow", want.beta_slow),
            ("mscale", want.mscale),
            ("mscale_all_dim", want.mscale_all_dim),
            ("routed_scaling_factor", 1.0),
        ])?;
        let rope_type = ["rope_parameters", "rope_scaling"]
            .into_iter()
            .find_map(|o| j.get(o).and_then(|r| r.get("rope_type").or(r.get("type"))));
        for (key, got, expected) in
            [("topk_method", j.get("topk_method"), "greedy"), ("the RoPE type", rope_type, "yarn")]
        {
            if got.and_then(Value::as_str) != Some(expected) {
                return Err(format!("config mismatch: {key} is {got:?}, DeepSeek-V2-Lite's is `{expected}`"));
            }
        }
        for (key, expected) in [("q_lora_rank", Value::Null), ("norm_topk_prob", false.into())] {
            let got = j.get(key).cloned().unwrap_or(Value::Null);
            if got != expected {
                return Err(format!("config mismatch: `{key}` is {got}, DeepSeek-V2-Lite's is {expected}"));
            }
        }
        j.expect_false(&["tie_word_embeddings", "attention_bias", "mlp_bias"])?;
        Ok(Config { layers: j.layers(want.layers)?, ..want })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config.json reference.py wrote with transformers 5.17 (three layers).
    const WRITTEN: &str = r#"{"attention_bias": false, "first_k_dense_replace": 1, "head_dim": 64,
        "hidden_size": 2048, "intermediate_size": 10944, "kv_lora_rank": 512, "model_type": "deepseek_v2",
        "moe_intermediate_size": 1408, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
        "norm_topk_prob": false, "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 3,
        "num_key_value_heads": 16, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "rms_norm_eps": 1e-06, "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 40.0,
        "mscale": 0.707, "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "rope_type": "yarn"}, "routed_scaling_factor": 1.0,
        "tie_word_embeddings": false, "topk_group": 1, "topk_method": "greedy", "v_head_dim": 128,
        "vocab_size": 102400}"#;

    #[test]
    fn deepseek_v2_lite_and_fewer_layers_are_accepted() {
        let c = Config::from_json(WRITTEN).unwrap();
        assert_eq!(c, Config { layers: 3, ..Config::DEEPSEEK_V2_LITE });
        // 15.7 B parameters with 27 layers, as published.
        let p = Config::DEEPSEEK_V2_LITE.parameters() as f64 / 1e9;
        assert!((p - 15.71).abs() < 0.02, "{p}");
    }

    #[test]
    fn a_mismatch_names_the_field_and_both_values() {
        let edit = |from: &str, to: &str| Config::from_json(&WRITTEN.replace(from, to)).unwrap_err();
        let e = edit(r#""n_routed_experts": 64"#, r#""n_routed_experts": 160"#);
        assert!(e.contains("`n_routed_experts` is 160, DeepSeek-V2-Lite's is 64"), "{e}");
        let e = edit(r#""factor": 40.0"#, r#""factor": 4.0"#);
        assert!(e.contains("`factor` is 4"), "{e}");
        let e = edit(r#""q_lora_rank": null"#, r#""q_lora_rank": 1536"#);
        assert!(e.contains("`q_lora_rank` is 1536"), "{e}");
        let e = edit(r#""topk_method": "greedy""#, r#""topk_method": "group_limited_greedy""#);
        assert!(e.contains("topk_method"), "{e}");
        let e = edit(r#""num_hidden_layers": 3"#, r#""num_hidden_layers": 28"#);
        assert!(e.contains("1 to 27"), "{e}");
        let e = edit(r#""model_type": "deepseek_v2""#, r#""model_type": "qwen2""#);
        assert!(e.contains("`qwen2`"), "{e}");
        assert!(Config::from_json("{").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn yarn_frequencies_are_transformers() {
        // rope.json of the same run: transformers 5.17's `inv_freq` (f32) and scaling.
        let theirs = [
            1.0,
            0.749_894_2,
            0.562_341_33,
            0.421_696_5,
            0.316_227_76,
            0.237_137_36,
            0.177_827_94,
            0.133_352_15,
            0.1,
            0.074_989_416,
            0.056_234_13,
            0.039_006_93,
            0.026_879_36,
            0.018_378_144,
            0.012_447_956,
            0.008_334_509,
            0.0055,
            0.003_561_997_3,
            0.002_249_365_2,
            0.001_370_513_5,
            0.000_790_569_4,
            0.000_414_990_4,
            0.000_177_827_82,
            3.333_803_4e-5,
            2.5e-5,
            1.874_735_6e-5,
            1.405_853_3e-5,
            1.054_241_2e-5,
            7.905_694_5e-6,
            5.928_434_3e-6,
            4.445_698_3e-6,
            3.333_803_5e-6,
        ];
        let (ours, scaling) = Config::DEEPSEEK_V2_LITE.yarn();
        assert_eq!(scaling, 1.0);
        // transformers 5.17: 192^-0.5 · (0.1 · 0.707 · ln 40 + 1)².
        let scale = Config::DEEPSEEK_V2_LITE.softmax_scale();
        assert!((scale - 0.114_721).abs() < 1e-6, "{scale}");
        // Within a few f32 ulps (torch's `base ** x` and Rust's powf round differently).
        for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
            assert!((a - b).abs() <= 1e-6 * b, "inv_freq[{i}]: {a} vs {b}");
        }
    }
}
