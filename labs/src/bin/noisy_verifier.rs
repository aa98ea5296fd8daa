//! Chapter 11 lab: GRPO under a noisy verifier. For each seed, the RL base agent
//! (`make_rl_base`), then `STEPS` steps of `train_rl` (the book's GRPO) with the hidden-test
//! reward read through `flaky_reward` at several false-negative and false-positive rates. Per
//! step: the true hidden pass rate and the share of the sampled episodes that submit (both from
//! a `LoggedEnv` log) and the kept count; after training: hidden pass rate, reads, turns and
//! first-edit-right on the first 200 train tasks (4 episodes per task, seed 11) and the
//! held-out tasks (4 per task, seed 12).
//!
//!     scripts/lab.sh noisy_verifier [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 11.

use std::cell::RefCell;
use std::rc::Rc;

use agentrl as arl;
use serde_json::json;

const LAB: &str = "noisy_verifier";
const STEPS: usize = 100;
/// (false-negative rate, false-positive rate) of each arm.
const NOISE: [(f64, f64); 6] = [(0.0, 0.0), (0.25, 0.0), (0.5, 0.0), (0.0, 0.25), (0.0, 0.5), (0.5, 0.5)];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let log: arl::EpisodeLog = Rc::new(RefCell::new(vec![]));
    let logged = |cfg: &arl::RLConfig| -> Box<dyn arl::Env> {
        Box::new(arl::LoggedEnv::new(arl::make_env(cfg), log.clone()))
    };
    // evaluation on the exact hidden tests, in the plain environment (not logged)
    let fields = |s: labs::Evaluation| {
        json!({ "pass_rate": s.pass_rate, "reads": s.reads, "turns": s.turns, "first_edit_right": s.first_edit_right, "per_task": s.per_task })
    };
    let eval = |m: &arl::TinyAgent| {
        let (train, heldout) = lab.chapter_eval(m);
        (fields(train), fields(heldout))
    };
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let base = arl::make_rl_base(tok, train, seed);
        let (tr, he) = eval(&base);
        runs.push(json!({ "seed": seed, "false_neg": null, "false_pos": null, "train": tr, "heldout": he }));
        for (false_neg, false_pos) in NOISE {
            log.borrow_mut().clear();
            let model = base.clone();
            let noise = arl::VerifierNoise { false_neg, false_pos, seed: 100 + seed };
            let reward = arl::flaky_reward(arl::make_reward(Default::default()), noise);
            let cfg = arl::RLConfig { reward, seed, ..Default::default() };
            let opts = arl::TrainOptions { env_factory: &logged, ..Default::default() };
            let history = arl::train_rl(&model, train, tok, &cfg, STEPS, opts);
            let per_step = arl::log_by_step(&history, &log.borrow(), 0);
            let hidden: Vec<f64> = per_step.iter().map(|e| arl::reward_dashboard(e).hidden_pass).collect();
            let submitted: Vec<f64> = per_step
                .iter()
                .map(|e| e.iter().filter(|x| x.info.submitted).count() as f64 / e.len().max(1) as f64)
                .collect();
            let kept: Vec<usize> = history.iter().map(|r| r.kept).collect();
            let (tr, he) = eval(&model);
            println!("seed {seed} fn {false_neg} fp {false_pos}: train {} held-out {}", tr["pass_rate"], he["pass_rate"]);
            runs.push(json!({
                "seed": seed, "false_neg": false_neg, "false_pos": false_pos,
                "hidden_per_step": hidden, "submitted_per_step": submitted, "kept_per_step": kept,
                "train": tr, "heldout": he,
            }));
        }
    }
    let results = json!({ "steps": STEPS, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
