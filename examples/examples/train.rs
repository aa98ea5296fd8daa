//! Train TinyAgent on the BugFix gym with the book's recipe (Chapter 9): the RL base agent
//! (`make_rl_base`: behaviour cloning on scripted demonstrations), then GRPO (`train_rl` with
//! the default `RLConfig`); report train and held-out pass rates before and after, and save
//! the trained agent.
//!
//!     scripts/example.sh train -- --steps 40 --out target/agent

use std::path::PathBuf;

use agentrl as arl;
use clap::Parser;
use rand_chacha::ChaCha8Rng;

/// Train TinyAgent with the book's recipe and save it.
#[derive(Parser)]
struct Cli {
    /// GRPO steps after the base agent (16 tasks x 8 episodes each).
    #[arg(long, default_value_t = 40)]
    steps: usize,
    /// Seed of the base agent's cloning and of GRPO's sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Folder the trained agent is saved to (config.json, weights.safetensors).
    #[arg(long, default_value = "target/agent")]
    out: PathBuf,
}

fn report(name: &str, model: &arl::TinyAgent, gym: &examples::BookGym) -> (f64, f64) {
    let tok = &gym.tok;
    let (cfg, env) = (arl::RLConfig::default(), &arl::make_env);
    let eval = |tasks: &[arl::Task], n, seed| {
        let opts = arl::EvalOptions { n_samples: n, seed, ..Default::default() };
        arl::evaluate(model, tasks, tok, opts, &cfg, env)
    };
    let train = eval(&gym.train[..200], 4, 11);
    let heldout = eval(&gym.heldout, 4, 12);
    println!("{name:<8} train:    {train}");
    println!("{name:<8} held-out: {heldout}");
    (train.pass_rate, heldout.pass_rate)
}

fn main() -> std::io::Result<()> {
    let cli = Cli::parse();
    tch::set_num_threads(1);
    let gym = examples::book_gym();
    let (train_tasks, tok) = (&gym.train, &gym.tok);
    eprintln!("cloning the base agent (make_rl_base, seed {})", cli.seed);
    let model = arl::make_rl_base(tok, train_tasks, cli.seed);
    let before = report("base", &model, &gym);

    let bar = indicatif::ProgressBar::new(cli.steps as u64).with_style(
        indicatif::ProgressStyle::with_template("GRPO {bar:30} {pos}/{len} steps, {elapsed}, {msg}")
            .expect("a valid template"),
    );
    // The standard sampling step, counted on the bar with the batch's pass rate.
    let sample = |model: &arl::TinyAgent, tasks: &[arl::Task], cfg: &arl::RLConfig, rng: &mut ChaCha8Rng| {
        let (kept, all) = arl::sample_step(model, &arl::make_env, tasks, tok, cfg, rng);
        bar.set_message(format!("batch pass rate {:.3}", arl::behavior_stats(&all).pass_rate));
        bar.inc(1);
        (kept, all)
    };
    let cfg = arl::RLConfig { seed: cli.seed, ..Default::default() };
    let opts = arl::TrainOptions { sample: Some(&sample), ..Default::default() };
    arl::train_rl(&model, train_tasks, tok, &cfg, cli.steps, opts);
    bar.finish();
    let after = report("trained", &model, &gym);
    println!(
        "pass rate, train {:.3} -> {:.3}, held-out {:.3} -> {:.3} after {} GRPO steps",
        before.0, after.0, before.1, after.1, cli.steps
    );
    examples::save_agent(&model, tok, &cli.out)?;
    println!("saved to {}", cli.out.display());
    Ok(())
}
