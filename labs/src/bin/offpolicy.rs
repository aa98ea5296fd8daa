//! Chapter 13 lab: GRPO with a stale or imprecise sampler, with and without importance weights.
//! For each seed: the RL base agent (`make_rl_base`), then `STEPS` steps of `train_offpolicy`
//! (the book's GRPO configuration, updated by `offpolicy_update`) for each arm: the sampler's
//! lag in updates (0, 2, 4, 8), its weights (an exact copy, or rounded to bf16) and the
//! correction (none, TIS with cap 2, MIS on [0.5, 5]). Per step: the sampled pass rate, the
//! update's approximate KL and clip fraction, and the weight statistics; after training: the
//! chapters' evaluation (4 episodes on each of the first 200 train tasks, seed 11; 4 per
//! held-out task, seed 12) with per-task pass rates.
//!
//!     scripts/lab.sh offpolicy [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 13.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "offpolicy";
const STEPS: usize = 100;
const TIS: arl::Correction = arl::Correction::Tis { cap: 2.0 };
const MIS: arl::Correction = arl::Correction::Mis { low: 0.5, high: 5.0 };
const NONE: arl::Correction = arl::Correction::None;
/// (name, lag, bf16 sampler, correction) of each arm.
const ARMS: [(&str, usize, bool, arl::Correction); 10] = [
    ("lag0", 0, false, NONE),
    ("lag0_bf16", 0, true, NONE),
    ("lag2", 2, false, NONE),
    ("lag2_tis", 2, false, TIS),
    ("lag2_mis", 2, false, MIS),
    ("lag4", 4, false, NONE),
    ("lag4_tis", 4, false, TIS),
    ("lag4_mis", 4, false, MIS),
    ("lag8", 8, false, NONE),
    ("lag8_tis", 8, false, TIS),
];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let bf16 = |m: &arl::TinyAgent| arl::rounded_copy(m, tch::Kind::BFloat16);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let (base_train, base_heldout) = lab.chapter_eval(&base);
        let mut arms = serde_json::Map::new();
        for (name, lag, rounded, correction) in ARMS {
            let model = base.clone();
            let cfg = arl::RLConfig { seed, ..Default::default() };
            let sampler: Option<&dyn Fn(&arl::TinyAgent) -> arl::TinyAgent> = if rounded { Some(&bf16) } else { None };
            let off = arl::OffPolicyOptions { lag, correction, sampler };
            let (history, weights) = arl::train_offpolicy(&model, train, tok, &cfg, STEPS, off, Default::default());
            let (after_train, after_heldout) = lab.chapter_eval(&model);
            println!(
                "seed {seed} {name:<10} train {:.3} held-out {:.3} (base {:.3})",
                after_train.pass_rate, after_heldout.pass_rate, base_heldout.pass_rate
            );
            let per_step = |f: &dyn Fn(&arl::StepRecord) -> f64| history.iter().map(f).collect::<Vec<f64>>();
            let per_update = |f: &dyn Fn(&arl::WeightStats) -> f64| weights.iter().map(f).collect::<Vec<f64>>();
            arms.insert(
                name.to_string(),
                json!({
                    "lag": lag, "bf16": rounded, "correction": format!("{correction:?}"),
                    "sampled_pass": per_step(&|r| r.sampled.pass_rate),
                    "approx_kl": per_step(&|r| r.update.approx_kl),
                    "clip_fraction": per_step(&|r| r.update.clip_fraction),
                    "mean_abs_log_ratio": per_update(&|w| w.mean_abs_log_ratio),
                    "max_abs_log_ratio": per_update(&|w| w.max_abs_log_ratio),
                    "mean_weight": per_update(&|w| w.mean_weight),
                    "altered": per_update(&|w| w.altered),
                    "train": after_train.json(), "heldout": after_heldout.json(),
                }),
            );
        }
        runs.push(json!({
            "seed": seed,
            "base": { "train": base_train.json(), "heldout": base_heldout.json() },
            "arms": arms,
        }));
    }
    let names: Vec<&str> = ARMS.iter().map(|a| a.0).collect();
    let results = json!({ "steps": STEPS, "arms": names, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
