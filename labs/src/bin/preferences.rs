//! Chapter 15 lab: three updates on one sampler. For each seed: the RL base agent
//! (`make_rl_base`), then `STEPS` steps of `train_rl` (16 tasks x 8 episodes a step from the
//! current policy, so every arm samples the same 12,800 episodes, and `cfg.minibatches`
//! optimizer steps per step at the same learning rate) for each arm: GRPO (the book's
//! update), rejection-sampling fine-tuning (`rft_update`: `sft_loss` on the step's passed
//! episodes, all groups kept) and DPO (`dpo_update`: pairs of a passed and a failed episode
//! from the same group, beta 0.1, the base agent as reference). After training: the chapters'
//! evaluation (4 episodes on each of the first 200 train tasks, seed 11; 4 per held-out task,
//! seed 12) and 8 episodes per held-out task (seed 13) for pass@k and the action entropy.
//!
//!     scripts/lab.sh preferences [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 15.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "preferences";
const STEPS: usize = 100;
const ARMS: [&str; 3] = ["grpo", "rft", "dpo"];
/// Episodes per held-out task for pass@k, and the seed they are drawn from.
const PASS_K: (usize, u64) = (8, 13);

/// Held-out coverage: per task the passes out of `PASS_K.0`, and the action entropy.
fn coverage(model: &arl::TinyAgent, lab: &labs::Lab) -> serde_json::Value {
    let opts = arl::EvalOptions { n_samples: PASS_K.0, seed: PASS_K.1, ..Default::default() };
    let (_, trajs) = arl::pass_rate(model, &lab.heldout, &lab.tok, opts);
    let wins: Vec<usize> = trajs.chunks(PASS_K.0).map(|g| g.iter().filter(|t| arl::passed(t)).count()).collect();
    let chunks: Vec<&[arl::Trajectory]> = trajs.chunks(100).collect();
    let entropy = chunks.iter().map(|c| arl::action_entropy(model, &arl::collate(c.iter(), arl::PAD_ID))).sum::<f64>()
        / chunks.len() as f64;
    json!({ "n": PASS_K.0, "wins": wins, "action_entropy": entropy })
}

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let (base_train, base_heldout) = lab.chapter_eval(&base);
        let reference = base.frozen();
        let dpo = |m: &arl::TinyAgent, a: &mut arl::FlatAdam, k: &[arl::Trajectory], c: &arl::RLConfig, r: &mut rand_chacha::ChaCha8Rng| {
            arl::dpo_update(m, a, k, c, r, &reference, 0.1)
        };
        let mut arms = serde_json::Map::new();
        for name in ARMS {
            let model = base.clone();
            let (update, keep_all): (Option<arl::UpdateHook>, bool) = match name {
                "grpo" => (None, false),
                "rft" => (Some(&arl::rft_update), true),
                _ => (Some(&dpo), false),
            };
            let cfg = arl::RLConfig { seed, keep_zero_signal: keep_all, ..Default::default() };
            let opts = arl::TrainOptions { update, ..Default::default() };
            let history = arl::train_rl(&model, train, tok, &cfg, STEPS, opts);
            let (after_train, after_heldout) = lab.chapter_eval(&model);
            println!(
                "seed {seed} {name:<5} train {:.3} held-out {:.3} (base {:.3})",
                after_train.pass_rate, after_heldout.pass_rate, base_heldout.pass_rate
            );
            let per_step = |f: &dyn Fn(&arl::StepRecord) -> f64| history.iter().map(f).collect::<Vec<f64>>();
            arms.insert(
                name.to_string(),
                json!({
                    "sampled_pass": per_step(&|r| r.sampled.pass_rate),
                    "kept": per_step(&|r| r.kept as f64),
                    "loss": per_step(&|r| r.update.loss),
                    "train": after_train.json(), "heldout": after_heldout.json(),
                    "coverage": coverage(&model, &lab),
                }),
            );
        }
        runs.push(json!({
            "seed": seed,
            "base": { "train": base_train.json(), "heldout": base_heldout.json(), "coverage": coverage(&base, &lab) },
            "arms": arms,
        }));
    }
    let results = json!({ "steps": STEPS, "arms": ARMS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
