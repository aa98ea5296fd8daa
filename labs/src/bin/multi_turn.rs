//! Chapter 12 lab: multi-turn training choices compared over several seeds, longer than a
//! chapter's minute allows. For each seed, from `make_rl_base(tok, seed)`, `STEPS` steps of
//! `train_rl` (default RLConfig, seed = the seed) in six variants:
//!
//! - `penalty_0`, `penalty_0.05`, `penalty_0.2`: reward = hidden verdict - p per call;
//! - `episode_keep1`, `call_keep1`: calls see only the last observation (`keep_obs` 1), and the
//!   update trains on whole episodes (full context) or on call samples (their views);
//! - `mixed`: the train tasks plus their `single_turn` copies, in `MixedTurnEnv`.
//!
//! Each model (and the base) is evaluated on the chapter's draws: 4 episodes on each of the
//! first 200 train tasks (seed 11) and 4 per held-out task (seed 12), with full context, and with
//! `evaluate_context` for keep_obs 0, 1, 2 on those train tasks (4 episodes per task, seed 11); `mixed` and the base also on
//! the single-turn copies.
//!
//!     scripts/lab.sh multi_turn [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 12.

use std::sync::Arc;

use agentrl as arl;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

const LAB: &str = "multi_turn";
const STEPS: usize = 100;

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let single: Vec<arl::Task> = train[..200].iter().map(arl::single_turn).collect();
    let single_heldout: Vec<arl::Task> = lab.heldout.iter().map(arl::single_turn).collect();
    let mixed: Vec<arl::Task> = train[..200].iter().cloned().chain(single.iter().cloned()).collect();
    let cfg = arl::RLConfig::default();
    let penalized = |p: f64| -> arl::RewardFn {
        Arc::new(move |info: &arl::EpisodeInfo| arl::hidden_reward(info) - p * info.turns as f64)
    };
    // every evaluation uses the default (unpenalized) reward; the full-context ones use the
    // mixed environment, which is the plain one-edit environment on multi-turn tasks
    let report = |m: &arl::TinyAgent, with_single: bool| {
        let eval = |tasks: &[arl::Task], draws| lab.evaluate(m, tasks, draws, &cfg, &arl::make_mixed_env).json();
        let ctx = |k: usize| {
            let opts = arl::EvalOptions { n_samples: 4, seed: 11, ..Default::default() };
            let s = arl::evaluate_context(m, &train[..labs::TRAIN_EVAL_TASKS], tok, Some(k), opts, &cfg, &arl::make_env);
            (format!("{k}"), labs::behavior_json(&s))
        };
        let keep: serde_json::Map<String, serde_json::Value> = [0, 1, 2].into_iter().map(ctx).collect();
        let mut out = json!({
            "train": eval(&train[..labs::TRAIN_EVAL_TASKS], labs::TRAIN_DRAWS),
            "heldout": eval(&lab.heldout, labs::HELDOUT_DRAWS),
            "train_keep_obs": keep,
        });
        if with_single {
            out["single_train"] = eval(&single, labs::TRAIN_DRAWS);
            out["single_heldout"] = eval(&single_heldout, labs::HELDOUT_DRAWS);
        }
        out
    };
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let mut variants = serde_json::Map::new();
        variants.insert("base".into(), report(&base, true));
        let run_cfg = arl::RLConfig { seed, ..cfg.clone() };
        for p in [0.0, 0.05, 0.2] {
            let model = base.clone();
            let c = arl::RLConfig { reward: penalized(p), ..run_cfg.clone() };
            arl::train_rl(&model, train, tok, &c, STEPS, arl::TrainOptions::default());
            variants.insert(format!("penalty_{p}"), report(&model, false));
            println!("seed {seed}: penalty {p} done");
        }
        for (name, level) in [("episode_keep1", arl::SampleLevel::Episode), ("call_keep1", arl::SampleLevel::Call)] {
            let model = base.clone();
            let sample = |m: &arl::TinyAgent, tasks: &[arl::Task], c: &arl::RLConfig, rng: &mut ChaCha8Rng| {
                arl::context_sample_step(m, &arl::make_env, tasks, tok, c, Some(1), level, rng)
            };
            let update: Option<arl::UpdateHook> = match level {
                arl::SampleLevel::Call => Some(&arl::call_update),
                arl::SampleLevel::Episode => None,
            };
            let opts = arl::TrainOptions { sample: Some(&sample), update, ..Default::default() };
            arl::train_rl(&model, train, tok, &run_cfg, STEPS, opts);
            variants.insert(name.into(), report(&model, false));
            println!("seed {seed}: {name} done");
        }
        let model = base.clone();
        let opts = arl::TrainOptions { env_factory: &arl::make_mixed_env, ..Default::default() };
        arl::train_rl(&model, &mixed, tok, &run_cfg, STEPS, opts);
        variants.insert("mixed".into(), report(&model, true));
        println!("seed {seed}: mixed done");
        runs.push(json!({ "seed": seed, "variants": variants }));
    }
    let results = json!({ "steps": STEPS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
