//! One integration-test binary; each module covers one surface of outbox.

mod util;

mod agents;
mod check;
mod claims;
mod cli;
mod detach;
mod envelope;
mod families;
mod faults;
mod fold;
mod folding;
mod fuzz_regressions;
mod history;
mod hook;
mod hostile;
mod json;
mod kinds;
mod layers;
mod layouts;
mod pack;
mod pack_memory;
mod props;
mod secrets;
mod settings;
mod shell;
mod snapshot;
mod store;
mod wrap;
