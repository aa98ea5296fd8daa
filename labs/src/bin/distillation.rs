//! Chapter 16 lab: distilling an RL-trained agent into a fresh base agent, four ways. For each
//! seed: the teacher is `make_rl_base(seed)` after `TEACHER_STEPS` GRPO steps (the book's
//! configuration); the student starts as `make_rl_base(seed + 100)` (another base agent). Each
//! arm runs `distill_train` for `STEPS` steps of 16 tasks x 8 episodes with the KL forward or
//! reverse, on the teacher's episodes (off-policy) or the student's own (on-policy). Per
//! step: the sampled pass rate, the loss and the teacher's tokens (generated, scored); after
//! training: the chapters' evaluation (4 episodes on each of the first 200 train tasks, seed
//! 11; 4 per held-out task, seed 12) with per-task pass rates, for the teacher, the student
//! before, and each arm. Then the same four arms for a smaller student (`small_*`): half the
//! width and one layer instead of two (`small_config`), behaviour-cloned on `make_rl_base`'s
//! demonstrations with the same steps, batch and learning rate (`small_base`), from seed + 200.
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

/// The smaller student's architecture: d_model 32 (not 64), d_mlp 128 (not 256), one layer.
fn small_config(tok: &arl::Tokenizer) -> arl::TinyAgentConfig {
    let vocab_size = tok.vocab_size();
    arl::TinyAgentConfig { vocab_size, d_model: 32, d_mlp: 128, n_layers: 1, ..Default::default() }
}

/// A smaller base agent: `make_rl_base`'s demonstrations and schedule, cloned into
/// `small_config` with chapter 15's `sft_train` (behavior_clone builds the default size only).
fn small_base(tok: &arl::Tokenizer, train: &[arl::Task], seed: u64) -> arl::TinyAgent {
    let mut opts = arl::BaseAgentOptions { seed, ..Default::default() };
    opts.demos.push((arl::Demonstrator::Oracle, 100));
    let demos = arl::scripted_demos(train, tok, &opts.demos, seed);
    let model = arl::TinyAgent::new(small_config(tok), seed);
    let sft = arl::SftOptions { steps: opts.steps, lr: opts.lr, batch_size: opts.batch_size, seed, ..Default::default() };
    arl::sft_train(&model, &demos, sft, None);
    model
}

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
        // each arm from a copy of `start`; the default-size student first, as before the
        // smaller one was added, so its arms compute what they computed then
        let mut run_arms = |prefix: &str, start: &arl::TinyAgent| {
            for (arm, sampler, direction) in ARMS {
                let name = format!("{prefix}{arm}");
                let student = start.clone();
                let opts = arl::DistillOptions { steps: STEPS, direction, sampler, seed, ..Default::default() };
                let history = arl::distill_train(&student, &teacher, train, tok, &cfg, opts);
                let (after_train, after_heldout) = lab.chapter_eval(&student);
                println!("seed {seed} {name:<17} train {:.3} held-out {:.3}", after_train.pass_rate, after_heldout.pass_rate);
                let per_step = |f: &dyn Fn(&arl::DistillRecord) -> f64| history.iter().map(f).collect::<Vec<f64>>();
                arms.insert(
                    name,
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
        };
        run_arms("", &student_base);
        let small = small_base(tok, train, seed + 200);
        let (small_train, small_heldout) = lab.chapter_eval(&small);
        println!("seed {seed} smaller student base {:.3}", small_heldout.pass_rate);
        run_arms("small_", &small);
        runs.push(json!({
            "seed": seed,
            "teacher": { "train": teacher_train.json(), "heldout": teacher_heldout.json() },
            "base": { "train": base_train.json(), "heldout": base_heldout.json() },
            "small_base": { "train": small_train.json(), "heldout": small_heldout.json() },
            "arms": arms,
        }));
    }
    let names: Vec<&str> = ARMS.iter().map(|a| a.0).collect();
    let small_names: Vec<String> = names.iter().map(|n| format!("small_{n}")).collect();
    let results = json!({
        "teacher_steps": TEACHER_STEPS, "steps": STEPS, "arms": names, "small_arms": small_names,
        "small_config": format!("{:?}", small_config(tok)), "runs": runs,
    });
    let path = labs::write_results(LAB, results)?;
    println!("wrote {}", path.display());
    Ok(())
}
