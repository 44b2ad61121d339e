//! Between runs: every run appends a record of figures (never content) to
//! a per-command series in the store ([`series`]); the next run is
//! compared with the previous one, and the series' size is measured
//! against a boundary, a harness's cut-off ([`trend`], with robust
//! [`stats`]). [`project`] finds the project and its revision.

pub mod project;
pub mod series;
pub mod stats;
pub mod trend;
