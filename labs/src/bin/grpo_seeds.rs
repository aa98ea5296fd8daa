//! Chapter 9 lab: GRPO from a more thoroughly cloned RL base agent, longer than a chapter's
//! minute allows, over several seeds. For each seed: the base agent (make_rl_base's recipe
//! with `CLONE_STEPS` cloning steps), then `STEPS` steps of `train_rl` with the default
//! RLConfig; both evaluated on the chapter's draws (8 episodes per train task, seed 11; 16 per
//! held-out task, seed 12).
//!
//!     scripts/lab.sh grpo_seeds [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 09.

use agentrl as arl;
use rand::SeedableRng;
use serde_json::json;

const LAB: &str = "grpo_seeds";
const CLONE_STEPS: usize = 400;
const STEPS: usize = 40;

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let cfg = arl::RLConfig::default();
    let mut runs = Vec::new();
    for seed in 0..seeds {
        // make_rl_base's recipe, cloned for CLONE_STEPS steps
        let opts = arl::BaseAgentOptions { seed, steps: CLONE_STEPS, ..Default::default() };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let tasks: Vec<arl::Task> = train.iter().map(|t| arl::randomize_names(t, &mut rng)).collect();
        let mut demos = arl::scripted_demos(&tasks, tok, &opts.kinds, opts.episodes_per_task, seed);
        demos.extend(arl::scripted_demos(&tasks, tok, &[arl::PolicyKind::Oracle], 2, seed));
        let base = arl::behavior_clone(tok, &demos, &opts);
        let (base_train, base_heldout) = lab.chapter_eval(&base);
        let model = base.clone();
        let run_cfg = arl::RLConfig { seed, ..cfg.clone() };
        arl::train_rl(&model, train, tok, &run_cfg, STEPS, arl::TrainOptions::default());
        let (after_train, after_heldout) = lab.chapter_eval(&model);
        println!(
            "seed {seed}: held-out {:.3} -> {:.3}, train {:.3} -> {:.3}",
            base_heldout.pass_rate, after_heldout.pass_rate, base_train.pass_rate, after_train.pass_rate
        );
        runs.push(json!({
            "seed": seed,
            "base": { "train": labs::behavior_json(&base_train), "heldout": labs::behavior_json(&base_heldout) },
            "grpo": { "train": labs::behavior_json(&after_train), "heldout": labs::behavior_json(&after_heldout) },
        }));
    }
    let results = json!({ "clone_steps": CLONE_STEPS, "steps": STEPS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
