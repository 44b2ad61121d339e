//! One integration-test binary; each module covers one surface of outbox.

mod util;

mod check;
mod envelope;
mod pack;
mod props;
