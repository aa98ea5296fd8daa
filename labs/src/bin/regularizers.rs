//! Chapter 10 lab: GRPO with and without regularizers, longer than a chapter's minute allows,
//! over several seeds. For each seed: the RL base agent (`make_rl_base`), then `STEPS` steps of
//! `train_regularized` with the default RLConfig for each variant (no regularizer; an entropy
//! bonus of 0.001, 0.01 or 0.05; k3, k3+ or k2 in the loss with beta 0.1; k1 in the reward with
//! beta 0.1 or 0.5), recording entropy and KL per step; each
//! trained agent is evaluated on the first 200 train tasks (4 episodes each, seed 11) and the
//! held-out tasks (4 episodes each, seed 12).
//!
//!     scripts/lab.sh regularizers [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 10.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "regularizers";
const STEPS: usize = 100;

/// Each variant: (name, the run's KL configuration, entropy coefficient).
fn variants() -> Vec<(&'static str, arl::KlConfig, f64)> {
    let off = arl::KlConfig::default();
    let kl = |kind, coef, placement| arl::KlConfig { kind, coef, placement, ..off };
    let (loss, reward) = (arl::KlPlacement::Loss, arl::KlPlacement::Reward);
    vec![
        ("none", off, 0.0),
        ("entropy_0.001", off, 0.001),
        ("entropy_0.01", off, 0.01),
        ("entropy", off, 0.05),
        ("k3_loss", kl(arl::KlKind::K3, 0.1, loss), 0.0),
        ("k3plus_loss", kl(arl::KlKind::K3Plus, 0.1, loss), 0.0),
        ("k2_loss", kl(arl::KlKind::K2, 0.1, loss), 0.0),
        ("k1_reward", kl(arl::KlKind::K1, 0.1, reward), 0.0),
        // a larger beta in the reward, to compare the placements at a similar KL
        ("k1_reward_0.5", kl(arl::KlKind::K1, 0.5, reward), 0.0),
    ]
}

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let cfg = arl::RLConfig::default();
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let reference = base.frozen();
        for (name, kl, entropy_coef) in variants() {
            let model = base.clone();
            let run_cfg = arl::RLConfig { seed, kl, ..cfg.clone() };
            let opts = arl::TrainOptions { ref_model: Some(&reference), ..Default::default() };
            let history = arl::train_regularized(&model, train, tok, &run_cfg, STEPS, entropy_coef, opts);
            let (train_eval, heldout) = lab.chapter_eval(&model);
            let train_pass = train_eval.pass_rate;
            let heldout_pass = heldout.pass_rate;
            let last = history.last().unwrap();
            println!(
                "seed {seed} {name:<12} train {train_pass:.3} held-out {heldout_pass:.3} entropy {:.3} kl {:.3}",
                last.entropy, last.kl
            );
            runs.push(json!({
                "seed": seed,
                "variant": name,
                "entropy_coef": entropy_coef,
                "kl_config": { "kind": kl.kind.to_string(), "coef": kl.coef, "placement": format!("{:?}", kl.placement) },
                "train_pass": train_pass,
                "heldout_pass": heldout_pass,
                "heldout_per_task": heldout.per_task,
                "entropy": history.iter().map(|r| r.entropy).collect::<Vec<_>>(),
                "kl": history.iter().map(|r| r.kl).collect::<Vec<_>>(),
                "sampled_pass": history.iter().map(|r| r.record.sampled.pass_rate).collect::<Vec<_>>(),
            }));
        }
    }
    let results = json!({ "steps": STEPS, "seeds": seeds, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
