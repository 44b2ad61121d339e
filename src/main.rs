//! Thin entry point: parse, run, exit. All logic lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    outbox::app::main()
}
