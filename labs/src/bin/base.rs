//! Chapter 6's base agent as a checkpoint: `make_base_agent` with its default options on the
//! generated train tasks, the agent that chapters 7 and 8 start from. Chapter 6 trains it in
//! front of the reader and checks that this file holds the same weights; chapters 7 and 8 load
//! it in one line (`load_checkpoint("base", &tok)`) instead of training it again.
//!
//!     scripts/lab.sh base
//!
//! Writes labs/results/base.safetensors (the weights) and labs/results/base.json (its
//! provenance, with the checkpoint's size and SHA-256, which `tangle --check` verifies).
//!
//! Uses chapters up to 06.

use agentrl as arl;

fn main() -> std::io::Result<()> {
    tch::set_num_threads(1);
    // the tasks and tokenizer every chapter from 6 on builds
    let train = arl::make_tasks(arl::Split::Train, 0);
    let heldout = arl::make_tasks(arl::Split::Heldout, 0);
    let tok = arl::build_tokenizer(&[train.clone(), heldout.clone()].concat());
    let opts = arl::BaseAgentOptions::default();
    let seed = opts.seed;
    let base = arl::make_base_agent(&tok, &train, opts);
    let recipe = "make_base_agent(&tok, &make_tasks(Split::Train, 0), BaseAgentOptions::default())";
    labs::write_agent("base", &base, recipe, seed, (train.len(), tok.vocab_size()))
}
