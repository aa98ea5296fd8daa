//! Load an agent saved by the `train` example and evaluate it on the book's tasks.
//!
//!     scripts/example.sh evaluate -- target/agent --episodes 4

use std::path::PathBuf;

use agentrl as arl;
use clap::Parser;

/// Evaluate a saved agent on the first 200 train tasks and the 200 held-out tasks of the gym.
#[derive(Parser)]
struct Cli {
    /// Folder of a saved agent (config.json, weights.safetensors).
    dir: PathBuf,
    /// Episodes per task.
    #[arg(long, default_value_t = 4)]
    episodes: usize,
    /// Seed of the evaluation's sampling.
    #[arg(long, default_value_t = 12)]
    seed: u64,
}

fn main() -> std::io::Result<()> {
    let cli = Cli::parse();
    tch::set_num_threads(1);
    let (model, tok) = examples::load_agent(&cli.dir)?;
    println!("{}: {} parameters, vocabulary of {}", cli.dir.display(), model.num_params(), tok.vocab_size());
    let (cfg, env) = (arl::RLConfig::default(), &arl::make_env);
    let opts = arl::EvalOptions { n_samples: cli.episodes, seed: cli.seed, ..Default::default() };
    let gym = examples::book_gym();
    for (name, tasks) in [("train", &gym.train[..200]), ("held-out", &gym.heldout[..])] {
        let stats = arl::evaluate(&model, &tasks, &tok, opts, &cfg, env);
        println!("{name:<9} ({} tasks x {}): {stats}", tasks.len(), cli.episodes);
    }
    Ok(())
}
