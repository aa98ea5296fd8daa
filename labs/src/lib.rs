//! What every lab shares: the code hash of its provenance and the results file it writes.
//!
//! A lab is a binary `labs/src/bin/NAME.rs`; run it with `scripts/lab.sh NAME [ARGS]`
//! (libtorch and the checker's determinism settings). It computes its results, then calls
//! [`write_results`], which writes `labs/results/NAME.json`:
//!
//! ```text
//! {
//!   "lab": "NAME",
//!   "command": "scripts/lab.sh NAME",
//!   "code_hash": "<sha256 hex, see tangle::labs>",
//!   "results": { ... }
//! }
//! ```
//!
//! The fields come in that order; objects inside `results` have their keys sorted
//! (serde_json's map), and floats are printed in their shortest round-trip form, so the
//! same results on the same code give the same bytes. Commit the file; chapters read it
//! from `$AGENTRL_LABS_DIR/NAME.json`, and `cargo run -p tangle -- --check` fails when the
//! code it records no longer matches.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// The repository root (the folder holding `agentrl/` and `labs/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("labs/ has a parent").to_path_buf()
}

/// The code hash of lab `lab` as the sources are now: SHA-256 over the sorted
/// `agentrl/src/*.rs` (only chapters 00..=NN when the lab has the line
/// `//! Uses chapters up to NN.`), then `labs/src/lib.rs`, then `labs/src/bin/NAME.rs` (each as
/// path, length and its tokens without comments, doc comments or layout, so a doc edit keeps
/// results current; [`tangle::labs::code_hash`] is the definition and the one implementation).
pub fn code_hash(lab: &str) -> String {
    tangle::labs::code_hash(&root(), lab).unwrap_or_else(|e| panic!("hashing the code of lab {lab}: {e}"))
}

/// Every field of an evaluation's behavior statistics as a JSON object (the form the labs'
/// results files use for them).
pub fn behavior_json(s: &agentrl::BehaviorStats) -> serde_json::Value {
    serde_json::json!({
        "episodes": s.episodes, "pass_rate": s.pass_rate, "reward": s.reward, "reads": s.reads,
        "tests": s.tests, "edits": s.edits, "first_edit_right": s.first_edit_right,
        "turns": s.turns, "length": s.length,
    })
}

/// An evaluation: behavior statistics (through `Deref`) and the pass rate of each task, in
/// task order, so that a chapter can resample tasks and seeds (`agentrl::bootstrap_ci`).
pub struct Evaluation {
    pub stats: agentrl::BehaviorStats,
    pub per_task: Vec<f64>,
}

impl std::ops::Deref for Evaluation {
    type Target = agentrl::BehaviorStats;
    fn deref(&self) -> &agentrl::BehaviorStats {
        &self.stats
    }
}

impl Evaluation {
    /// `behavior_json` of the statistics, with `per_task`: each task's pass rate.
    pub fn json(&self) -> serde_json::Value {
        let mut v = behavior_json(&self.stats);
        v["per_task"] = serde_json::json!(self.per_task);
        v
    }
}

/// What the training labs start from: the number of seeds to run, the book's tokenizer, and
/// its train and held-out tasks.
pub struct Lab {
    pub seeds: u64,
    pub tok: agentrl::Tokenizer,
    pub train: Vec<agentrl::Task>,
    pub heldout: Vec<agentrl::Task>,
}

impl Lab {
    /// One thread (a lab's numbers must not depend on the machine's cores), the seeds from the
    /// first argument (else `default_seeds`), the tokenizer and tasks at seed 0.
    pub fn start(default_seeds: u64) -> Self {
        tch::set_num_threads(1);
        let seeds = std::env::args().nth(1).map(|s| s.parse().expect("SEEDS: a number"));
        // the generated gym of chapter 04 §4.3, as the chapters build it
        let train = agentrl::make_tasks(agentrl::Split::Train, 0);
        let heldout = agentrl::make_tasks(agentrl::Split::Heldout, 0);
        let tok = agentrl::build_tokenizer(&[train.clone(), heldout.clone()].concat());
        Lab { seeds: seeds.unwrap_or(default_seeds), tok, train, heldout }
    }

    /// `n` episodes per task of `tasks` from `seed`, in `env` as `cfg` configures it: the
    /// behavior statistics (as `agentrl::evaluate` computes them) and each task's pass rate.
    pub fn evaluate(
        &self,
        model: &agentrl::TinyAgent,
        tasks: &[agentrl::Task],
        (n, seed): (usize, u64),
        cfg: &agentrl::RLConfig,
        env: &dyn Fn(&agentrl::RLConfig) -> Box<dyn agentrl::Env>,
    ) -> Evaluation {
        let opts = agentrl::EvalOptions { n_samples: n, seed, ..Default::default() };
        let (cfg, mut rng) = opts.prepare(cfg);
        let trajs = agentrl::sample_groups(model, env, tasks, &self.tok, &cfg, &mut rng);
        let per_task = agentrl::per_task_pass_rates(&trajs, n);
        Evaluation { stats: agentrl::behavior_stats(&trajs), per_task }
    }

    /// The chapters' evaluation: 4 episodes per task of the first 200 train tasks (seed 11) and
    /// of the 200 held-out tasks (seed 12), default RLConfig, plain environment -> (train,
    /// held-out).
    pub fn chapter_eval(&self, model: &agentrl::TinyAgent) -> (Evaluation, Evaluation) {
        let (cfg, env) = (agentrl::RLConfig::default(), &agentrl::make_env);
        let train = &self.train[..TRAIN_EVAL_TASKS];
        (self.evaluate(model, train, TRAIN_DRAWS, &cfg, env), self.evaluate(model, &self.heldout, HELDOUT_DRAWS, &cfg, env))
    }
}

/// The train tasks the chapters evaluate on: the first 200 (of 1,000).
pub const TRAIN_EVAL_TASKS: usize = 200;

/// The chapters' evaluation draws: (episodes per task, seed) on the train and held-out tasks.
pub const TRAIN_DRAWS: (usize, u64) = (4, 11);
pub const HELDOUT_DRAWS: (usize, u64) = (4, 12);

/// The results file of lab `lab`: `labs/results/NAME.json`.
pub fn results_path(lab: &str) -> PathBuf {
    root().join(tangle::labs::RESULTS_DIR).join(format!("{lab}.json"))
}

#[derive(Serialize)]
struct ResultsFile<'a> {
    lab: &'a str,
    command: String,
    code_hash: String,
    results: serde_json::Value,
}

/// The command that reran this process, as it will be recorded: `scripts/lab.sh NAME ARGS`.
fn this_command(lab: &str) -> String {
    let mut cmd = tangle::labs::command(lab);
    for arg in std::env::args().skip(1) {
        let plain = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,=/:+".contains(c));
        cmd.push(' ');
        if plain {
            cmd.push_str(&arg);
        } else {
            cmd.push_str(&format!("'{}'", arg.replace('\'', r"'\''")));
        }
    }
    cmd
}

/// Store `model` as lab `lab`'s checkpoint, `labs/results/NAME.safetensors`, for chapters to
/// load (`agentrl::load_checkpoint`) -> what its results file records of it: the file (relative
/// to the root), its size and SHA-256 (which `tangle --check` compares with the file).
pub fn write_checkpoint(lab: &str, model: &agentrl::TinyAgent) -> std::io::Result<serde_json::Value> {
    let ext = tangle::labs::CHECKPOINT_EXTENSION;
    let name = format!("{}/{lab}.{ext}", tangle::labs::RESULTS_DIR);
    let path = root().join(&name);
    std::fs::create_dir_all(path.parent().expect("results dir"))?;
    // Write beside, then rename; tch picks safetensors by the extension, so the temp name keeps it.
    let tmp = path.with_extension(format!("tmp.{ext}"));
    model.vs.save(&tmp).map_err(|e| std::io::Error::other(format!("saving {}: {e}", tmp.display())))?;
    std::fs::rename(&tmp, &path)?;
    let bytes = std::fs::read(&path)?;
    let tensors = model.vs.variables().len();
    Ok(serde_json::json!({
        "file": name, "bytes": bytes.len(), "sha256": tangle::labs::sha256_hex(&bytes), "tensors": tensors,
    }))
}

/// A lab whose result is a trained agent: store `model` as lab `lab`'s checkpoint and write
/// its results file with what made it (`recipe`, `seed`, the tasks and vocabulary it saw).
pub fn write_agent(
    lab: &str,
    model: &agentrl::TinyAgent,
    recipe: &str,
    seed: u64,
    (train_tasks, vocab_size): (usize, i64),
) -> std::io::Result<()> {
    let checkpoint = write_checkpoint(lab, model)?;
    println!("wrote {}", checkpoint["file"].as_str().unwrap_or_default());
    let parameters: i64 = model.vs.trainable_variables().iter().map(|t| t.numel() as i64).sum();
    let results = serde_json::json!({
        "checkpoint": checkpoint, "recipe": recipe, "seed": seed,
        "train_tasks": train_tasks, "vocab_size": vocab_size, "parameters": parameters,
    });
    println!("wrote {}", write_results(lab, results)?.display());
    Ok(())
}

/// Write `labs/results/NAME.json` (pretty JSON, fixed field order, trailing newline) and
/// return its path. The code hash is taken now; if `scripts/lab.sh` recorded one before it
/// built the lab (`AGENTRL_LAB_CODE_HASH`) and the code changed since, nothing is written:
/// these results may come from neither version.
pub fn write_results(lab: &str, results: serde_json::Value) -> std::io::Result<PathBuf> {
    let code_hash = code_hash(lab);
    if let Ok(before) = std::env::var("AGENTRL_LAB_CODE_HASH") {
        if before != code_hash {
            return Err(std::io::Error::other(format!(
                "the code of lab {lab} changed while it was built or run (hash {before} then {code_hash}); \
                 nothing written: run `{}` again",
                tangle::labs::command(lab)
            )));
        }
    }
    let file = ResultsFile { lab, command: this_command(lab), code_hash, results };
    let mut text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
    text.push('\n');
    let path = results_path(lab);
    std::fs::create_dir_all(path.parent().expect("results dir"))?;
    // Write beside, then rename: a reader never sees half a file.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}
