//! `--format json`: fold a JSON document into a smaller valid one. (Issue 4.)
