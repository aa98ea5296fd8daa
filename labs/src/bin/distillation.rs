//! Chapter 16 lab: distilling an RL-trained agent into a fresh base agent, four ways. For each
//! seed: the teacher is `make_rl_base(seed)` after `TEACHER_STEPS` GRPO steps (the book's
//! configuration); the student starts as `make_rl_base(seed + 100)` (another base agent). Each
//! arm runs `distill_train` for `STEPS` steps of 16 tasks x 8 episodes with the KL forward or
//! reverse, on the teacher's episodes (off-policy) or the student's own (on-policy). Per
//! step: the sampled pass rate, the loss and the teacher's tokens (generated, scored); after
//! training: the chapters' evaluation (4 episodes on each of the first 200 train tasks, seed
//! 11; 4 per held-out task, seed 12) with per-task pass rates, for the teacher, the student
//! before, and each arm.
//!
//!     scripts/lab.sh distillation [SEEDS]      (default 3 seeds: 0..SEEDS)
//!
//! Uses chapters up to 16.

use agentrl as arl;
use serde_json::json;

const LAB: &str = "distillation";
const TEACHER_STEPS: usize = 100;
const STEPS: usize = 60;
/// (name, sampler, direction) of each arm.
const ARMS: [(&str, arl::DistillSampler, arl::KlDirection); 4] = [
    ("off_forward", arl::DistillSampler::Teacher, arl::KlDirection::Forward),
    ("off_reverse", arl::DistillSampler::Teacher, arl::KlDirection::Reverse),
    ("on_forward", arl::DistillSampler::Student, arl::KlDirection::Forward),
    ("on_reverse", arl::DistillSampler::Student, arl::KlDirection::Reverse),
];

fn main() -> std::io::Result<()> {
    let lab = labs::Lab::start(3);
    let (seeds, tok, train) = (lab.seeds, &lab.tok, &lab.train);
    let mut runs = Vec::new();
    for seed in 0..seeds {
        let cfg = arl::RLConfig { seed, ..Default::default() };
        let teacher = arl::make_rl_base(tok, train, seed);
        arl::train_rl(&teacher, train, tok, &cfg, TEACHER_STEPS, Default::default());
        let teacher = teacher.frozen();
        let student_base = arl::make_rl_base(tok, train, seed + 100);
        let (teacher_train, teacher_heldout) = lab.chapter_eval(&teacher);
        let (base_train, base_heldout) = lab.chapter_eval(&student_base);
        println!("seed {seed} teacher held-out {:.3}, student base {:.3}", teacher_heldout.pass_rate, base_heldout.pass_rate);
        let mut arms = serde_json::Map::new();
        for (name, sampler, direction) in ARMS {
            let student = student_base.clone();
            let opts = arl::DistillOptions { steps: STEPS, direction, sampler, seed, ..Default::default() };
            let history = arl::distill_train(&student, &teacher, train, tok, &cfg, opts);
            let (after_train, after_heldout) = lab.chapter_eval(&student);
            println!("seed {seed} {name:<11} train {:.3} held-out {:.3}", after_train.pass_rate, after_heldout.pass_rate);
            let per_step = |f: &dyn Fn(&arl::DistillRecord) -> f64| history.iter().map(f).collect::<Vec<f64>>();
            arms.insert(
                name.to_string(),
                json!({
                    "sampler": format!("{sampler:?}"), "direction": format!("{direction:?}"),
                    "loss": per_step(&|r| r.loss),
                    "sampled_pass": per_step(&|r| r.sampled.pass_rate),
                    "teacher_generated": per_step(&|r| r.teacher_generated as f64),
                    "teacher_scored": per_step(&|r| r.teacher_scored as f64),
                    "train": after_train.json(), "heldout": after_heldout.json(),
                }),
            );
        }
        runs.push(json!({
            "seed": seed,
            "teacher": { "train": teacher_train.json(), "heldout": teacher_heldout.json() },
            "base": { "train": base_train.json(), "heldout": base_heldout.json() },
            "arms": arms,
        }));
    }
    let names: Vec<&str> = ARMS.iter().map(|a| a.0).collect();
    let results = json!({ "teacher_steps": TEACHER_STEPS, "steps": STEPS, "arms": names, "runs": runs });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
