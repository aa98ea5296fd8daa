//! Chapter 18 lab: the dashboard of a clean run beside two faulty ones. For each seed: the RL
//! base agent (`make_rl_base`), then `STEPS` steps of `train_logged` with chapter 18's
//! debugging configuration (16 tasks x 8 episodes a step at temperature 0.8, k3+ KL to a frozen
//! reference in the loss at 0.05, micro-batches of 4 rows) for each arm: no fault,
//! `Bug::RefIsPolicy` (quiet: the reference trains with the policy) and `Bug::LossSignFlipped`
//! (loud). Per step: every `DashboardRow` field; every 10 steps, the held-out pass rate (one
//! episode per held-out task, seed 1000 + seed).
//!
//!     scripts/lab.sh debugging [SEEDS]      (default 2 seeds: 0..SEEDS)
//!
//! Uses chapters up to 18.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "debugging";
const STEPS: usize = 40;
const ARMS: [(&str, Option<arl::Bug>); 3] = [
    ("clean", None),
    ("ref_is_policy", Some(arl::Bug::RefIsPolicy)),
    ("loss_sign_flipped", Some(arl::Bug::LossSignFlipped)),
];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(2);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let cfg = arl::RLConfig {
            temperature: 0.8,
            micro_batch: 4,
            kl: arl::KlConfig { kind: arl::KlKind::K3Plus, coef: 0.05, ..Default::default() },
            seed,
            ..Default::default()
        };
        let mut arms = serde_json::Map::new();
        for (name, bug) in ARMS {
            let model = base.clone();
            let rows = arl::train_logged(
                &model, train, tok, &cfg, STEPS, bug, Some(&lab.heldout), 10, &arl::make_env,
            );
            let last = rows.last().and_then(|r| r.eval_pass).unwrap_or(f64::NAN);
            println!("seed {seed} {name:<18} held-out {last:.3}");
            let steps: Vec<serde_json::Value> = (rows.iter())
                .map(|r| {
                    json!({
                        "pass_rate": r.pass_rate, "reward": r.reward,
                        "signal_groups": r.signal_groups, "length": r.length, "loss": r.loss,
                        "clip_fraction": r.clip_fraction, "kl_ref": r.kl_ref,
                        "grad_norm": r.grad_norm, "ratio_max": r.ratio_max,
                        "eval_pass": r.eval_pass,
                    })
                })
                .collect();
            arms.insert(name.to_string(), json!({ "steps": steps }));
        }
        runs.push(json!({ "seed": seed, "arms": arms }));
    }
    let names: Vec<&str> = ARMS.iter().map(|a| a.0).collect();
    let results = json!({ "steps": STEPS, "arms": names, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
