//! Chapter 10 lab: the two KL placements at a matched KL. The `regularizers` lab runs k3 in the
//! loss and k1 in the reward at the same beta (0.1), where the reward placement holds the
//! policy nearer the base; a comparison of placements needs the same KL instead. This lab runs
//! k1 in the reward at two smaller betas, `BETAS`, with everything else as `regularizers` runs
//! it (the RL base agent per seed as the frozen reference, `STEPS` steps of
//! `train_regularized`, the chapters' evaluation draws), so that its runs pair seed by seed
//! and task by task with that lab's. Chapter 10 picks, by a rule fixed before these runs, the
//! beta whose final KL is nearest k3-in-the-loss's and compares the two placements there.
//!
//!     scripts/lab.sh kl_matched [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 10.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "kl_matched";
const STEPS: usize = 100;
/// Below `regularizers`' 0.1, whose KL (0.089) fell short of k3 in the loss (0.109).
const BETAS: [f64; 2] = [0.05, 0.075];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let reference = base.frozen();
        for coef in BETAS {
            let model = base.clone();
            let kl = arl::KlConfig {
                kind: arl::KlKind::K1,
                coef,
                placement: arl::KlPlacement::Reward,
                ..Default::default()
            };
            let cfg = arl::RLConfig { seed, kl, ..Default::default() };
            let opts = arl::TrainOptions { ref_model: Some(&reference), ..Default::default() };
            let history = arl::train_regularized(&model, train, tok, &cfg, STEPS, 0.0, opts);
            let (train_eval, heldout) = lab.chapter_eval(&model);
            let last = history.last().unwrap();
            println!(
                "seed {seed} k1 reward {coef}: train {:.3} held-out {:.3} kl {:.3}",
                train_eval.pass_rate, heldout.pass_rate, last.kl
            );
            runs.push(json!({
                "seed": seed,
                "coef": coef,
                "train_pass": train_eval.pass_rate,
                "heldout_pass": heldout.pass_rate,
                "heldout_per_task": heldout.per_task,
                "kl": history.iter().map(|r| r.kl).collect::<Vec<_>>(),
                "entropy": history.iter().map(|r| r.entropy).collect::<Vec<_>>(),
            }));
        }
    }
    let results = json!({ "steps": STEPS, "seeds": seeds, "betas": BETAS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
