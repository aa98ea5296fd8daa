//! Chapter 10 lab: GRPO with and without regularizers, longer than a chapter's minute allows,
//! over several seeds. For each seed: the RL base agent (`make_rl_base`), then `STEPS` steps of
//! `train_regularized` with the default RLConfig for each variant (no regularizer, an entropy
//! bonus, k3 or k3+ in the loss, k1 in the reward), recording entropy and KL per step; each
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

fn variants() -> Vec<(&'static str, arl::RegularizerOptions)> {
    let none = arl::RegularizerOptions::default();
    let kl = |kl: arl::KlEstimator, kl_in_reward: bool| arl::RegularizerOptions { kl, kl_coef: 0.1, kl_in_reward, ..none };
    vec![
        ("none", none),
        ("entropy", arl::RegularizerOptions { entropy_coef: 0.05, ..none }),
        ("k3_loss", kl(arl::KlEstimator::K3, false)),
        ("k3plus_loss", kl(arl::KlEstimator::K3Plus, false)),
        ("k1_reward", kl(arl::KlEstimator::K1, true)),
    ]
}

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let cfg = arl::RLConfig::default();
    let eval = |m: &arl::TinyAgent, tasks: &[arl::Task], draws| lab.evaluate(m, tasks, draws, &cfg, &arl::make_env);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let reference = base.frozen();
        for (name, reg) in variants() {
            let model = base.clone();
            let run_cfg = arl::RLConfig { seed, ..cfg.clone() };
            let opts = arl::TrainOptions { ref_model: Some(&reference), ..Default::default() };
            let history = arl::train_regularized(&model, train, tok, &run_cfg, STEPS, reg, opts);
            let train_pass = eval(&model, &train[..labs::TRAIN_EVAL_TASKS], labs::TRAIN_DRAWS).pass_rate;
            let heldout = eval(&model, &lab.heldout, labs::HELDOUT_DRAWS);
            let heldout_pass = heldout.pass_rate;
            let last = history.last().unwrap();
            println!(
                "seed {seed} {name:<12} train {train_pass:.3} held-out {heldout_pass:.3} entropy {:.3} kl {:.3}",
                last.entropy, last.kl
            );
            runs.push(json!({
                "seed": seed,
                "variant": name,
                "train_pass": train_pass,
                "heldout_pass": heldout_pass,
                "heldout_per_task": heldout.per_task,
                "entropy": history.iter().map(|r| r.entropy).collect::<Vec<_>>(),
                "kl": history.iter().map(|r| r.kl).collect::<Vec<_>>(),
                "sampled_pass": history.iter().map(|r| r.record.sampled.pass_rate).collect::<Vec<_>>(),
            }));
        }
    }
    let coefs = json!({ "entropy_coef": 0.05, "kl_coef": 0.1 });
    let results = json!({ "steps": STEPS, "seeds": seeds, "coefficients": coefs, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
