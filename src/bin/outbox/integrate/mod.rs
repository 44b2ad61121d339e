//! Integration with shells (`outbox init`) and agents (`outbox hook`).

pub mod hook;
pub mod reopen;
pub mod shell;
