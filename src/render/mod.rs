//! Rendering: the one record of a run's facts ([`facts`]) that every header
//! and the store's metadata are written from, and the text envelope
//! ([`envelope`]) with passthrough's safe copy and the budget size rules;
//! its head and tail (`ends`) fold runs of like lines ([`fold`]); signal
//! kinds as the reader sees them ([`kinds`]).

mod ends;
pub mod envelope;
pub mod facts;
pub mod fold;
pub mod kinds;
pub mod layout;
mod masks;
