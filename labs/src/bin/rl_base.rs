//! The RL base agent as a checkpoint: Chapter 9's `make_rl_base` at seed 0 on the generated
//! train tasks, the agent that chapters 10–19 start from. Chapter 9 trains it in front of the
//! reader and checks that this file holds the same weights; the later chapters load it in one
//! line (`load_checkpoint("rl_base", &tok)`) instead of training it again.
//!
//!     scripts/lab.sh rl_base
//!
//! Writes labs/results/rl_base.safetensors (the weights) and labs/results/rl_base.json (its
//! provenance, with the checkpoint's size and SHA-256, which `tangle --check` verifies).
//!
//! Uses chapters up to 09.

use agentrl as arl;

/// The seed chapters 10–19 build their base agent with.
const SEED: u64 = 0;

fn main() -> std::io::Result<()> {
    tch::set_num_threads(1);
    // the tasks and tokenizer every chapter from 6 on builds
    let train = arl::make_tasks(arl::Split::Train, 0);
    let heldout = arl::make_tasks(arl::Split::Heldout, 0);
    let tok = arl::build_tokenizer(&[train.clone(), heldout.clone()].concat());
    let base = arl::make_rl_base(&tok, &train, SEED);
    let recipe = "make_rl_base(&tok, &make_tasks(Split::Train, 0), 0)";
    labs::write_agent("rl_base", &base, recipe, SEED, (train.len(), tok.vocab_size()))
}
