//! A saved agent loads as the same model: its tokenizer, its shape and its logits, bit for bit.

use agentrl as arl;

#[test]
fn a_saved_agent_loads_with_the_same_logits_and_bad_folders_are_errors() {
    tch::set_num_threads(1);
    let tok = examples::book_gym().tok;
    let cfg = arl::TinyAgentConfig { vocab_size: tok.vocab_size(), ..Default::default() };
    let agent = arl::TinyAgent::new(cfg, 7);
    let dir = tempfile::tempdir().unwrap();
    examples::save_agent(&agent, &tok, dir.path()).unwrap();
    let (loaded, loaded_tok) = examples::load_agent(dir.path()).unwrap();
    assert_eq!(loaded_tok.vocab, tok.vocab);
    assert_eq!(loaded.cfg, agent.cfg);
    let ids = tch::Tensor::from_slice(&tok.encode("fix the bug in clamp ( x , lo , hi )")).unsqueeze(0);
    let (a, b) = (agent.forward(&ids), loaded.forward(&ids));
    assert_eq!(f64::try_from((a - b).abs().max()).unwrap(), 0.0, "the loaded agent computes other logits");
    // Not the same agent as a fresh one of the same shape: the weights were loaded.
    let fresh = arl::TinyAgent::new(cfg, 8);
    assert!(f64::try_from((fresh.forward(&ids) - loaded.forward(&ids)).abs().max()).unwrap() > 0.0);

    // A folder without an agent, or with a vocabulary that does not fit the model, is an error.
    let empty = tempfile::tempdir().unwrap();
    let err = examples::load_agent(empty.path()).err().unwrap().to_string();
    assert!(err.contains("config.json"), "{err}");
    let config = dir.path().join("config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replacen("\"vocab_size\": ", "\"vocab_size\": 1", 1)).unwrap();
    let err = examples::load_agent(dir.path()).err().unwrap().to_string();
    assert!(err.contains("words for a model of vocab_size"), "{err}");
}
