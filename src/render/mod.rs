//! Rendering: the text envelope printed when input ends.

pub mod envelope;
pub mod facts;
