//! What the examples share: saving and loading a trained agent.
//!
//! An agent on disk is a folder holding three files:
//!
//! - `config.json`: the model's shape (`TinyAgentConfig`, device aside: a loaded agent is
//!   on the CPU) and the tokenizer's vocabulary, id by id;
//! - `weights.safetensors`: every tensor of the model's `VarStore`, by name;
//! - nothing else is needed: the environment, the tasks and the training settings are the
//!   book's, chosen by the program that loads the agent.
//!
//! Loading builds a fresh `TinyAgent` of the saved shape and reads the weights into it, so a
//! saved agent gives the same logits, bit for bit, as the one that was saved.

use std::path::Path;

use agentrl as arl;
use serde::{Deserialize, Serialize};

/// The book's gym (chapter 04 §4.3), as every chapter from 06 on builds it.
pub struct BookGym {
    /// The 1,000 generated train tasks.
    pub train: Vec<arl::Task>,
    /// The 200 held-out tasks.
    pub heldout: Vec<arl::Task>,
    /// The tokenizer built over both.
    pub tok: arl::Tokenizer,
}

/// The book's gym: train and held-out tasks at seed 0, decoy rate 0.8, and their tokenizer.
pub fn book_gym() -> BookGym {
    let train = arl::make_tasks(arl::Split::Train, 0);
    let heldout = arl::make_tasks(arl::Split::Heldout, 0);
    let tok = arl::build_tokenizer(&[train.clone(), heldout.clone()].concat());
    BookGym { train, heldout, tok }
}

/// The model's shape and the tokenizer's words, as `config.json` holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedConfig {
    pub vocab_size: i64,
    pub max_len: i64,
    pub d_model: i64,
    pub n_heads: i64,
    pub n_layers: i64,
    pub d_mlp: i64,
    pub tie_embeddings: bool,
    pub out_dim: Option<i64>,
    /// `fused` or `naive`.
    pub attention: String,
    /// The tokenizer's vocabulary, id by id (the first nine are the specials).
    pub vocab: Vec<String>,
}

impl SavedConfig {
    fn of(agent: &arl::TinyAgent, tok: &arl::Tokenizer) -> Self {
        let c = agent.cfg;
        let attention = match c.attention {
            arl::Attention::Fused => "fused",
            arl::Attention::Naive => "naive",
        };
        SavedConfig {
            vocab_size: c.vocab_size,
            max_len: c.max_len,
            d_model: c.d_model,
            n_heads: c.n_heads,
            n_layers: c.n_layers,
            d_mlp: c.d_mlp,
            tie_embeddings: c.tie_embeddings,
            out_dim: c.out_dim,
            attention: attention.to_string(),
            vocab: tok.vocab.clone(),
        }
    }

    fn model_config(&self) -> std::io::Result<arl::TinyAgentConfig> {
        let attention = match self.attention.as_str() {
            "fused" => arl::Attention::Fused,
            "naive" => arl::Attention::Naive,
            other => return Err(invalid(format!("attention `{other}`: expected `fused` or `naive`"))),
        };
        Ok(arl::TinyAgentConfig {
            vocab_size: self.vocab_size,
            max_len: self.max_len,
            d_model: self.d_model,
            n_heads: self.n_heads,
            n_layers: self.n_layers,
            d_mlp: self.d_mlp,
            tie_embeddings: self.tie_embeddings,
            out_dim: self.out_dim,
            attention,
            device: tch::Device::Cpu,
        })
    }
}

fn invalid(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why)
}

/// Write `agent` and `tok` into folder `dir` (created if missing): `config.json` and
/// `weights.safetensors`.
pub fn save_agent(agent: &arl::TinyAgent, tok: &arl::Tokenizer, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let config = serde_json::to_string_pretty(&SavedConfig::of(agent, tok)).map_err(|e| invalid(e.to_string()))?;
    std::fs::write(dir.join("config.json"), config + "\n")?;
    agent.vs.save(dir.join("weights.safetensors")).map_err(|e| invalid(format!("saving the weights: {e}")))
}

/// Read an agent saved by [`save_agent`] from `dir` -> the agent (on the CPU) and its tokenizer.
pub fn load_agent(dir: &Path) -> std::io::Result<(arl::TinyAgent, arl::Tokenizer)> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display())))?;
    let saved: SavedConfig =
        serde_json::from_str(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
    let tok = arl::Tokenizer::new(saved.vocab.iter().skip(arl::SPECIAL_TOKENS.len()));
    if tok.vocab != saved.vocab {
        return Err(invalid(format!("{}: the vocabulary is not a tokenizer's (specials first, then sorted words)", path.display())));
    }
    if tok.vocab_size() != saved.vocab_size {
        return Err(invalid(format!(
            "{}: {} words for a model of vocab_size {}",
            path.display(),
            tok.vocab_size(),
            saved.vocab_size
        )));
    }
    let mut agent = arl::TinyAgent::new(saved.model_config()?, 0);
    let weights = dir.join("weights.safetensors");
    agent.vs.load(&weights).map_err(|e| invalid(format!("loading {}: {e}", weights.display())))?;
    Ok((agent, tok))
}
