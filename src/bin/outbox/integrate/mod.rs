//! Integration with shells (`outbox init`) and agents (`outbox hook`).

pub mod hook;
pub mod install;
pub mod reopen;
pub mod settings;
pub mod shell;
pub mod trailer;
